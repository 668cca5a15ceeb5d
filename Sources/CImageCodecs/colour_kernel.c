/*
 * The matrix-shaper colour kernel (see aiv_codecs.h): why it is C is said
 * there. Rows are converted in blocks of BLOCK pixels: the input lookups
 * into planar floats first (one 32-bit load a pixel, then three table
 * reads: scalar, since this processor's wide gathers are slower than
 * loads), then the matrix, the clamp and sRGB's curve over the block, and
 * the bytes packed back beside the pixel's own alpha (a plain loop the
 * compiler vectorises).
 *
 * sRGB's curve is evaluated, not looked up (a 16K-entry table indexed by
 * the square root of linear light before, three scalar reads a pixel): for
 * linear v of at least 0.0031308 it is 1.055 v^(1/2.4) - 0.055, which with
 * z = v^(1/4) (two square roots) is 1.055 z^(5/3) - 0.055, smooth on
 * [0.0031308^(1/4), 1]: a degree-5 polynomial in z, fitted by least
 * squares on that interval, is within 0.005 of a level of it in float
 * arithmetic; below, 12.92 v. This is the inverse of Little CMS's own sRGB
 * profile's curve (parametric type 4), which the tables were built from,
 * and Swift still checks every kernel against Little CMS's transform.
 *
 * The square root is the builtin that sets no errno: with libm's sqrtf
 * (errno on a negative) the compiler keeps the loop scalar. The body is
 * compiled twice, for the x86-64 baseline and for AVX2 with FMA, and the
 * second is taken when the processor has them. (AVX-512, tried: slower on
 * the benchmark machine.)
 */
#include "aiv_codecs.h"
#include <math.h>
#include <string.h>

#define BLOCK 256

/* Pixels are read and written as 32-bit words, R in the low byte. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the kernel packs RGBA as a little-endian word");

#if defined(__has_builtin)
#if __has_builtin(__builtin_elementwise_sqrt)
#define AIV_SQRT(x) __builtin_elementwise_sqrt(x)
#endif
#endif
#ifndef AIV_SQRT
#define AIV_SQRT(x) sqrtf(x)
#endif

/* sRGB's curve on linear v in [0, 1], scaled to 0...255 and offset by a
 * half for truncation (see above). */
static inline __attribute__((always_inline)) float encode(float v) {
    float z = AIV_SQRT(AIV_SQRT(v));
    float p = -0.06394833326339722f;
    p = p * z + 0.2752377986907959f;
    p = p * z - 0.5589020252227783f;
    p = p * z + 1.2439554929733276f;
    p = p * z + 0.16534632444381714f;
    p = p * z - 0.061700280755758286f;
    return (v < 0.0031308f ? v * 12.92f : p) * 255.0f + 0.5f;
}

static inline __attribute__((always_inline)) void convert(const aiv_matrix_shaper *k, uint8_t *pixels,
                                                          size_t width, size_t height, size_t bytes_per_row) {
    float r[BLOCK], g[BLOCK], b[BLOCK];
    const float m0 = k->matrix[0], m1 = k->matrix[1], m2 = k->matrix[2];
    const float m3 = k->matrix[3], m4 = k->matrix[4], m5 = k->matrix[5];
    const float m6 = k->matrix[6], m7 = k->matrix[7], m8 = k->matrix[8];
    const float *t0 = k->to_linear[0], *t1 = k->to_linear[1], *t2 = k->to_linear[2];
    for (size_t y = 0; y < height; y++) {
        uint8_t *row = pixels + y * bytes_per_row;
        for (size_t start = 0; start < width; start += BLOCK) {
            size_t n = width - start < BLOCK ? width - start : BLOCK;
            uint8_t *p = row + start * 4;
            for (size_t i = 0; i < n; i++) {
                uint32_t v;
                memcpy(&v, p + i * 4, 4);  /* R, G, B, A in memory: little-endian R lowest */
                r[i] = t0[v & 255];
                g[i] = t1[(v >> 8) & 255];
                b[i] = t2[(v >> 16) & 255];
            }
            for (size_t i = 0; i < n; i++) {
                float x = m0 * r[i] + m1 * g[i] + m2 * b[i];
                float yv = m3 * r[i] + m4 * g[i] + m5 * b[i];
                float z = m6 * r[i] + m7 * g[i] + m8 * b[i];
                x = x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
                yv = yv < 0.0f ? 0.0f : (yv > 1.0f ? 1.0f : yv);
                z = z < 0.0f ? 0.0f : (z > 1.0f ? 1.0f : z);
                uint32_t v;
                memcpy(&v, p + i * 4, 4);
                v = (v & 0xFF000000u) | (uint32_t)(int32_t)encode(x) | ((uint32_t)(int32_t)encode(yv) << 8)
                    | ((uint32_t)(int32_t)encode(z) << 16);
                memcpy(p + i * 4, &v, 4);
            }
        }
    }
}

#if defined(__x86_64__) && defined(__clang__)
__attribute__((target("avx2,fma"))) static void convert_avx2(const aiv_matrix_shaper *k, uint8_t *pixels,
                                                             size_t width, size_t height, size_t bytes_per_row) {
    convert(k, pixels, width, height, bytes_per_row);
}
#endif

void aiv_matrix_shaper_apply(const aiv_matrix_shaper *k, uint8_t *pixels,
                             size_t width, size_t height, size_t bytes_per_row) {
#if defined(__x86_64__) && defined(__clang__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        convert_avx2(k, pixels, width, height, bytes_per_row);
        return;
    }
#endif
    convert(k, pixels, width, height, bytes_per_row);
}

/* The resampler's reading of an opaque row through a matrix-shaper
 * profile (ImageResizer's LinearSource): the same input stage as the
 * kernel's, then the matrix and the clip to 0...1, written as linear
 * floats (R, G, B, 1) for the filter, not encoded. */
static inline __attribute__((always_inline)) void expand(const uint8_t *source, size_t count, const float *tables,
                                                         const float *matrix, float *out) {
    float r[BLOCK], g[BLOCK], b[BLOCK];
    const float m0 = matrix[0], m1 = matrix[1], m2 = matrix[2];
    const float m3 = matrix[3], m4 = matrix[4], m5 = matrix[5];
    const float m6 = matrix[6], m7 = matrix[7], m8 = matrix[8];
    for (size_t start = 0; start < count; start += BLOCK) {
        size_t n = count - start < BLOCK ? count - start : BLOCK;
        const uint8_t *p = source + start * 4;
        float *o = out + start * 4;
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, p + i * 4, 4);
            r[i] = tables[v & 255];
            g[i] = tables[256 + ((v >> 8) & 255)];
            b[i] = tables[512 + ((v >> 16) & 255)];
        }
        for (size_t i = 0; i < n; i++) {
            float x = m0 * r[i] + m1 * g[i] + m2 * b[i];
            float yv = m3 * r[i] + m4 * g[i] + m5 * b[i];
            float z = m6 * r[i] + m7 * g[i] + m8 * b[i];
            o[i * 4] = x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
            o[i * 4 + 1] = yv < 0.0f ? 0.0f : (yv > 1.0f ? 1.0f : yv);
            o[i * 4 + 2] = z < 0.0f ? 0.0f : (z > 1.0f ? 1.0f : z);
            o[i * 4 + 3] = 1.0f;
        }
    }
}

#if defined(__x86_64__) && defined(__clang__)
__attribute__((target("avx2,fma"))) static void expand_avx2(const uint8_t *source, size_t count, const float *tables,
                                                            const float *matrix, float *out) {
    expand(source, count, tables, matrix, out);
}
#endif

void aiv_matrix_shaper_expand_opaque(const uint8_t *source, size_t count, const float *tables, const float *matrix,
                                     float *out) {
#if defined(__x86_64__) && defined(__clang__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        expand_avx2(source, count, tables, matrix, out);
        return;
    }
#endif
    expand(source, count, tables, matrix, out);
}
