/*
 * libavif (0.11 on Debian 12, with dav1d and aom), called from Swift.
 *
 * libavif reports errors by return value (avifResult), never by longjmp,
 * so Swift calls it directly, as it calls libwebp.
 *
 * Without the headers the build stops here with a message that says what
 * to install, rather than a bare "file not found".
 */
#if __has_include(<avif/avif.h>)
#include <avif/avif.h>
#else
#error "libavif's headers are missing: install libavif-dev (Debian: apt-get install libavif-dev pkg-config; ./quickstart does it)"
#endif
