/*
 * Little CMS 2 (lcms2), called from Swift.
 *
 * lcms2 reports errors by return values (NULL, FALSE) and through a log
 * handler, never by longjmp, so Swift calls it directly (unlike libpng and
 * libjpeg: see CImageCodecs). The only C here: lcms2's pixel-format
 * constants (TYPE_RGBA_8 and the like) are macros built from function-like
 * macros (COLORSPACE_SH, CHANNELS_SH...), which Swift does not import;
 * these inline functions give their values.
 */
#include <lcms2.h>

/* 8-bit RGBA, the decoders' layout (the alpha byte is left as it is). */
static inline cmsUInt32Number aiv_lcms_rgba_8(void) { return TYPE_RGBA_8; }
/* 8-bit RGB without alpha (tests and tools). */
static inline cmsUInt32Number aiv_lcms_rgb_8(void) { return TYPE_RGB_8; }
/* Grey stored as RGBA (R = G = B): the first byte is read, the other three skipped. */
static inline cmsUInt32Number aiv_lcms_gray_in_rgba_8(void) {
    return COLORSPACE_SH(PT_GRAY) | CHANNELS_SH(1) | BYTES_SH(1) | EXTRA_SH(3);
}
/* CMYK as libjpeg returns it: 0 = no ink. */
static inline cmsUInt32Number aiv_lcms_cmyk_8(void) { return TYPE_CMYK_8; }
/* Adobe APP14 CMYK, stored inverted: 255 = no ink (lcms2's "reversed" flavour). */
static inline cmsUInt32Number aiv_lcms_cmyk_8_inverted(void) { return TYPE_CMYK_8_REV; }
