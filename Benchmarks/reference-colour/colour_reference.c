/*
 * colour_reference: Little CMS converting RGBA pixels to sRGB, called from C,
 * the reference for the library's colour-management cost (issue 31, item 4).
 *
 * It does what AsyncImageKit's decoders do for a tagged image: one
 * cmsCreateTransform from the source profile (TYPE_RGBA_8 in, TYPE_RGBA_8
 * out, relative colorimetric, no black-point compensation, cmsFLAGS_NOCACHE)
 * to Little CMS's own sRGB, then cmsDoTransform in place over the pixels,
 * and reports the transform's creation time and the conversion's
 * megapixels per second (best of the runs).
 *
 * Build and run (Debian: apt-get install liblcms2-dev):
 *
 *   cc -O2 -o colour_reference colour_reference.c $(pkg-config --cflags --libs lcms2)
 *   ./colour_reference PROFILE.icc [PIXELS.rgba WIDTH HEIGHT] [RUNS]
 *
 * PROFILE.icc must be an RGB profile (the pixels are RGBA).
 *
 * PIXELS.rgba is raw 8-bit RGBA (4 bytes a pixel, no header): the same
 * pixels the Swift side converts (the library's decoded buffer written out).
 * Without it, a 6000x4000 (24-megapixel) buffer of pseudo-random pixels is
 * used. RUNS defaults to 5. The output is one line of key=value pairs:
 *
 *   profile=a98.icc width=6000 height=4000 create_ms=0.41 best_ms=61.2 median_ms=62.0 mpx_per_s=392.1
 *   median_mpx_per_s=387.1 checksum=...
 *
 * The checksum (FNV-1a over the converted pixels of the last run) lets a
 * caller check that both sides produced the same bytes. With
 * COLOUR_REFERENCE_OUTPUT=PATH in the environment the converted pixels are
 * also written there (to count how far another conversion is from them).
 *
 * Built with AIV_KERNEL defined and the library's kernel beside it (the
 * benchmark does this, with clang, as SwiftPM compiles it):
 *
 *   clang -O2 -DAIV_KERNEL -I../../Sources/CImageCodecs/include -o colour_reference \
 *       colour_reference.c ../../Sources/CImageCodecs/colour_kernel.c $(pkg-config --cflags --libs lcms2)
 *
 * it also times, on the same pixels and in the same run, AsyncImageKit's
 * matrix-shaper kernel alone (its tables made here from the profile as
 * MatrixShaperKernel.swift makes them: kernel_median_mpx_per_s and
 * kernel_checksum, which must equal the library's own output), and two
 * floors for any kernel of its shape: the input lookups alone (one word
 * read a pixel, three table reads, the values packed back as bytes:
 * lookups_median_mpx_per_s) and a pass that reads and writes every pixel
 * (pass_median_mpx_per_s).
 */
#include <lcms2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef AIV_KERNEL
#include "aiv_codecs.h"
#endif

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long length = ftell(f);
    if (length < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    unsigned char *data = malloc(length > 0 ? (size_t)length : 1);
    if (data && fread(data, 1, (size_t)length, f) != (size_t)length) { free(data); data = NULL; }
    fclose(f);
    *size = (size_t)length;
    return data;
}

static double median_of(double *times, int runs) {
    for (int i = 1; i < runs; i++)
        for (int j = i; j > 0 && times[j - 1] > times[j]; j--) { double t = times[j]; times[j] = times[j - 1]; times[j - 1] = t; }
    return runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
}

static uint64_t fnv1a(const unsigned char *bytes, size_t count) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < count; i++) { hash ^= bytes[i]; hash *= 0x100000001b3ull; }
    return hash;
}

#ifdef AIV_KERNEL
/* The profile's RGB-to-XYZ matrix from its colorant tags, row-major. */
static int colorants(cmsHPROFILE profile, double m[9]) {
    cmsTagSignature tags[3] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    for (int c = 0; c < 3; c++) {
        const cmsCIEXYZ *xyz = cmsReadTag(profile, tags[c]);
        if (!xyz) return 0;
        m[c] = xyz->X; m[3 + c] = xyz->Y; m[6 + c] = xyz->Z;
    }
    return 1;
}

/* The kernel's tables, as MatrixShaperKernel.swift makes them (the same
 * operations in the same order, so the same floats). */
static int make_kernel(cmsHPROFILE input, cmsHPROFILE srgb, aiv_matrix_shaper *k) {
    double source[9], target[9];
    if (!cmsIsMatrixShaper(input) || !colorants(input, source) || !colorants(srgb, target)) return 0;
    const double *t = target;
    double det = t[0] * (t[4] * t[8] - t[5] * t[7]) - t[1] * (t[3] * t[8] - t[5] * t[6]) + t[2] * (t[3] * t[7] - t[4] * t[6]);
    double adjugate[9] = {
        t[4] * t[8] - t[5] * t[7], t[2] * t[7] - t[1] * t[8], t[1] * t[5] - t[2] * t[4],
        t[5] * t[6] - t[3] * t[8], t[0] * t[8] - t[2] * t[6], t[2] * t[3] - t[0] * t[5],
        t[3] * t[7] - t[4] * t[6], t[1] * t[6] - t[0] * t[7], t[0] * t[4] - t[1] * t[3],
    };
    double inverse[9];
    for (int i = 0; i < 9; i++) inverse[i] = adjugate[i] / det;
    for (int row = 0; row < 3; row++)
        for (int column = 0; column < 3; column++) {
            double sum = 0;
            for (int i = 0; i < 3; i++) sum = sum + inverse[row * 3 + i] * source[i * 3 + column];
            k->matrix[row * 3 + column] = (float)sum;
        }
    cmsTagSignature curves[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    for (int c = 0; c < 3; c++) {
        const cmsToneCurve *curve = cmsReadTag(input, curves[c]);
        if (!curve) return 0;
        for (int level = 0; level < 256; level++)
            k->to_linear[c][level] = cmsEvalToneCurveFloat(curve, (float)level / 255);
    }
    return 1;
}

/* A floor for a kernel of this shape: the kernel's own input stage alone
 * (blocks of 256 pixels: one word read a pixel, three table reads into
 * planar floats), each value packed back as a byte so that none is
 * optimised away; no matrix, no curve. Compiled as the kernel is (AVX2
 * and FMA when the processor has them). */
#define FLOOR_BLOCK 256
static inline __attribute__((always_inline)) void lookups_body(const aiv_matrix_shaper *k, uint8_t *pixels, size_t count) {
    float r[FLOOR_BLOCK], g[FLOOR_BLOCK], b[FLOOR_BLOCK];
    for (size_t start = 0; start < count; start += FLOOR_BLOCK) {
        size_t n = count - start < FLOOR_BLOCK ? count - start : FLOOR_BLOCK;
        uint8_t *p = pixels + start * 4;
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, p + i * 4, 4);
            r[i] = k->to_linear[0][v & 255];
            g[i] = k->to_linear[1][(v >> 8) & 255];
            b[i] = k->to_linear[2][(v >> 16) & 255];
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, p + i * 4, 4);
            v = (v & 0xFF000000u) | (uint32_t)(int32_t)(r[i] * 255.0f) | ((uint32_t)(int32_t)(g[i] * 255.0f) << 8)
                | ((uint32_t)(int32_t)(b[i] * 255.0f) << 16);
            memcpy(p + i * 4, &v, 4);
        }
    }
}

/* The other floor: every pixel read and written (its colour bits flipped). */
static inline __attribute__((always_inline)) void pass_body(uint8_t *pixels, size_t count) {
    for (size_t i = 0; i < count; i++) {
        uint32_t v;
        memcpy(&v, pixels + i * 4, 4);
        v ^= 0x00FFFFFFu;
        memcpy(pixels + i * 4, &v, 4);
    }
}

#if defined(__x86_64__) && defined(__clang__)
__attribute__((target("avx2,fma"))) static void lookups_avx2(const aiv_matrix_shaper *k, uint8_t *pixels, size_t count) {
    lookups_body(k, pixels, count);
}
__attribute__((target("avx2,fma"))) static void pass_avx2(uint8_t *pixels, size_t count) { pass_body(pixels, count); }
#define HAS_AVX2 (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#else
#define lookups_avx2 lookups_body
#define pass_avx2 pass_body
#define HAS_AVX2 0
#endif

static void lookups_only(const aiv_matrix_shaper *k, uint8_t *pixels, size_t count) {
    if (HAS_AVX2) lookups_avx2(k, pixels, count); else lookups_body(k, pixels, count);
}

static void pass_only(uint8_t *pixels, size_t count) {
    if (HAS_AVX2) pass_avx2(pixels, count); else pass_body(pixels, count);
}

/* The median time of `runs` calls of `work` on fresh copies of `source`, in ms. */
#define TIMED(runs, source, pixels, bytes, work) ({ \
    double *ts = calloc((size_t)(runs), sizeof(double)); \
    for (int run = 0; run < (runs); run++) { \
        memcpy((pixels), (source), (bytes)); \
        double t0 = now_ms(); \
        work; \
        ts[run] = now_ms() - t0; \
    } \
    double m = median_of(ts, (runs)); \
    free(ts); \
    m; })
#endif

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3 && argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s PROFILE.icc [PIXELS.rgba WIDTH HEIGHT] [RUNS]\n", argv[0]);
        return 2;
    }
    size_t profile_size = 0;
    unsigned char *profile_bytes = read_file(argv[1], &profile_size);
    if (!profile_bytes) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }

    size_t width = 6000, height = 4000;
    int runs = 5;
    unsigned char *source = NULL;
    if (argc >= 5) {
        size_t size = 0;
        width = strtoul(argv[3], NULL, 10);
        height = strtoul(argv[4], NULL, 10);
        source = read_file(argv[2], &size);
        if (!source || width == 0 || height == 0 || size != width * height * 4) {
            fprintf(stderr, "%s: not %zux%zu RGBA\n", argv[2], width, height);
            return 1;
        }
        if (argc == 6) runs = atoi(argv[5]);
    } else {
        if (argc == 3) runs = atoi(argv[2]);
        source = malloc(width * height * 4);
        if (!source) return 1;
        uint64_t state = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < width * height * 4; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            source[i] = (i % 4 == 3) ? 255 : (unsigned char)(state >> 56);
        }
    }
    if (runs < 1) runs = 1;
    size_t bytes = width * height * 4;
    unsigned char *pixels = malloc(bytes);
    if (!pixels) return 1;

    double start = now_ms();
    cmsHPROFILE input = cmsOpenProfileFromMem(profile_bytes, (cmsUInt32Number)profile_size);
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM transform = input && srgb
        ? cmsCreateTransform(input, TYPE_RGBA_8, srgb, TYPE_RGBA_8, INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_NOCACHE)
        : NULL;
    double create_ms = now_ms() - start;
    if (!transform) { fprintf(stderr, "Little CMS cannot make a transform from %s\n", argv[1]); return 1; }

    double best = 1e300;
    double *times = calloc((size_t)runs, sizeof(double));
    for (int run = 0; run < runs; run++) {
        memcpy(pixels, source, bytes);  /* every run converts the same pixels, in place */
        double t0 = now_ms();
        cmsDoTransform(transform, pixels, pixels, (cmsUInt32Number)(width * height));
        double elapsed = now_ms() - t0;
        if (times) times[run] = elapsed;
        if (elapsed < best) best = elapsed;
    }
    /* The median too: the Swift side's figures are medians. */
    double median = best;
    if (times) {
        median = median_of(times, runs);
        free(times);
    }
    uint64_t hash = fnv1a(pixels, bytes);

    const char *output = getenv("COLOUR_REFERENCE_OUTPUT");
    if (output && *output) {
        FILE *f = fopen(output, "wb");
        if (!f || fwrite(pixels, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", output); return 1; }
        fclose(f);
    }
    const char *name = strrchr(argv[1], '/');
    double megapixels = (double)(width * height) / 1e6;
    printf("profile=%s width=%zu height=%zu create_ms=%.3f best_ms=%.3f median_ms=%.3f mpx_per_s=%.1f median_mpx_per_s=%.1f checksum=%016llx",
           name ? name + 1 : argv[1], width, height, create_ms, best, median,
           megapixels / (best / 1e3), megapixels / (median / 1e3), (unsigned long long)hash);
#ifdef AIV_KERNEL
    {
        static aiv_matrix_shaper kernel;
        if (make_kernel(input, srgb, &kernel)) {
            /* More runs than Little CMS's: each is several times shorter. */
            int more = runs * 4;
            double k_ms = TIMED(more, source, pixels, bytes, aiv_matrix_shaper_apply(&kernel, pixels, width, height, width * 4));
            uint64_t k_hash = fnv1a(pixels, bytes);
            double l_ms = TIMED(more, source, pixels, bytes, lookups_only(&kernel, pixels, width * height));
            double p_ms = TIMED(more, source, pixels, bytes, pass_only(pixels, width * height));
            printf(" kernel_median_ms=%.3f kernel_median_mpx_per_s=%.1f kernel_checksum=%016llx"
                   " lookups_median_ms=%.3f lookups_median_mpx_per_s=%.1f pass_median_ms=%.3f pass_median_mpx_per_s=%.1f",
                   k_ms, megapixels / (k_ms / 1e3), (unsigned long long)k_hash,
                   l_ms, megapixels / (l_ms / 1e3), p_ms, megapixels / (p_ms / 1e3));
        }
    }
#endif
    printf("\n");

    cmsDeleteTransform(transform);
    cmsCloseProfile(input);
    cmsCloseProfile(srgb);
    free(pixels);
    free(source);
    free(profile_bytes);
    return 0;
}
