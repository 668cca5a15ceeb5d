/*
 * libjxl (0.7 on Debian 12), called from Swift.
 *
 * libjxl reports errors by return value (JxlDecoderStatus), never by
 * longjmp, so Swift calls it directly. encode.h only for
 * JxlColorEncodingSetToSRGB (the decoder's preferred output profile).
 *
 * Without the headers the build stops here with a message that says what
 * to install, rather than a bare "file not found".
 */
#if __has_include(<jxl/decode.h>)
#include <jxl/decode.h>
#include <jxl/encode.h>
#else
#error "libjxl's headers are missing: install libjxl-dev (Debian: apt-get install libjxl-dev pkg-config; ./quickstart does it)"
#endif
