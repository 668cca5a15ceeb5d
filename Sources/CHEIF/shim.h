/*
 * libheif (1.15 on Debian 12, HEVC through libde265), called from Swift.
 *
 * libheif reports errors by return value (struct heif_error), never by
 * longjmp, so Swift calls it directly.
 *
 * Without the headers the build stops here with a message that says what
 * to install, rather than a bare "file not found".
 */
#if __has_include(<libheif/heif.h>)
#include <libheif/heif.h>
#else
#error "libheif's headers are missing: install libheif-dev (Debian: apt-get install libheif-dev pkg-config; ./quickstart does it)"
#endif
