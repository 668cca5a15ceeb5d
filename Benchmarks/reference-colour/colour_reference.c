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
 */
#include <lcms2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
        for (int i = 1; i < runs; i++)
            for (int j = i; j > 0 && times[j - 1] > times[j]; j--) { double t = times[j]; times[j] = times[j - 1]; times[j - 1] = t; }
        median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
        free(times);
    }
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; i++) { hash ^= pixels[i]; hash *= 0x100000001b3ull; }

    const char *output = getenv("COLOUR_REFERENCE_OUTPUT");
    if (output && *output) {
        FILE *f = fopen(output, "wb");
        if (!f || fwrite(pixels, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", output); return 1; }
        fclose(f);
    }
    const char *name = strrchr(argv[1], '/');
    printf("profile=%s width=%zu height=%zu create_ms=%.3f best_ms=%.3f median_ms=%.3f mpx_per_s=%.1f median_mpx_per_s=%.1f checksum=%016llx\n",
           name ? name + 1 : argv[1], width, height, create_ms, best, median,
           (double)(width * height) / 1e6 / (best / 1e3), (double)(width * height) / 1e6 / (median / 1e3),
           (unsigned long long)hash);

    cmsDeleteTransform(transform);
    cmsCloseProfile(input);
    cmsCloseProfile(srgb);
    free(pixels);
    free(source);
    free(profile_bytes);
    return 0;
}
