/*
 * formats_reference: AVIF, HEIC and JPEG XL decoded from C with each codec's
 * own library, the reference for the library's modern-format decoders
 * (issue 32, item 5).
 *
 * It does the work AsyncImageKit's decoders do with colour management off,
 * in the same calls and settings, one thread:
 *
 *   avif  libavif: avifDecoderCreate, maxThreads 1, XMP ignored, strict flags
 *         off; avifDecoderSetIOMemory, avifDecoderParse, avifDecoderNextImage;
 *         avifImageYUVToRGB to straight 8-bit RGBA straight into the buffer.
 *   heic  libheif: a context with max decoding threads 0 (on the calling
 *         thread), read from memory without copy, the primary image decoded
 *         to interleaved RGBA with convert_hdr_to_8bit and strict decoding;
 *         its rows copied into the buffer (libheif allocates its own image).
 *   jxl   libjxl: JxlDecoderCreate(NULL) (no parallel runner), basic info,
 *         colour encoding, frame and full-image events, unpremultiplied
 *         alpha, 8-bit RGBA straight into the buffer.
 *
 * The buffer is one RGBA buffer reused by every run ("recycled", what a
 * loader under load decodes into), or a new one for each run ("fresh":
 * malloc'ed, written by the decode, freed), printed beside it.
 *
 * With WIDTH and HEIGHT, each decode is followed by an area-average
 * reduction to that size (each output pixel the mean of the source pixels
 * it covers, fractional edges weighted; alpha-weighted colour is not needed
 * for the opaque benchmark inputs): a display-size decode, as these codecs
 * have no reduced-size decode of their own.
 *
 * Build and run (Debian: apt-get install libavif-dev libheif-dev libjxl-dev):
 *
 *   cc -O2 -o formats_reference formats_reference.c \
 *       $(pkg-config --cflags --libs libavif libheif libjxl)
 *   ./formats_reference FORMAT FILE RUNS recycled|fresh [WIDTH HEIGHT]
 *
 * The output is one line of key=value pairs:
 *
 *   format=avif width=3000 height=2000 out_width=3000 out_height=2000 runs=9
 *   best_ms=61.2 median_ms=62.0 checksum=...
 *
 * The checksum (FNV-1a over the last run's output, rows packed) lets the
 * caller check that both sides produced the same pixels.
 */
#include <avif/avif.h>
#include <libheif/heif.h>
#include <jxl/decode.h>
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

/* The image's size, read once before the runs (not timed). */
static int image_size(const char *format, const uint8_t *data, size_t size, int *width, int *height) {
    if (strcmp(format, "avif") == 0) {
        avifDecoder *decoder = avifDecoderCreate();
        int ok = decoder && avifDecoderSetIOMemory(decoder, data, size) == AVIF_RESULT_OK &&
                 avifDecoderParse(decoder) == AVIF_RESULT_OK;
        if (ok) { *width = (int)decoder->image->width; *height = (int)decoder->image->height; }
        if (decoder) avifDecoderDestroy(decoder);
        return ok;
    }
    if (strcmp(format, "heic") == 0) {
        struct heif_context *context = heif_context_alloc();
        struct heif_image_handle *handle = NULL;
        int ok = heif_context_read_from_memory_without_copy(context, data, size, NULL).code == heif_error_Ok &&
                 heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok;
        if (ok) { *width = heif_image_handle_get_width(handle); *height = heif_image_handle_get_height(handle); }
        if (handle) heif_image_handle_release(handle);
        heif_context_free(context);
        return ok;
    }
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    JxlBasicInfo info;
    int ok = JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO) == JXL_DEC_SUCCESS &&
             JxlDecoderSetInput(decoder, data, size) == JXL_DEC_SUCCESS;
    JxlDecoderCloseInput(decoder);
    ok = ok && JxlDecoderProcessInput(decoder) == JXL_DEC_BASIC_INFO &&
         JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS;
    if (ok) {
        int swaps = info.orientation >= JXL_ORIENT_TRANSPOSE;
        *width = (int)(swaps ? info.ysize : info.xsize);
        *height = (int)(swaps ? info.xsize : info.ysize);
    }
    JxlDecoderDestroy(decoder);
    return ok;
}

static int decode_avif(const uint8_t *data, size_t size, uint8_t *out, int width, int height) {
    avifDecoder *decoder = avifDecoderCreate();
    if (!decoder) return 0;
    decoder->maxThreads = 1;
    decoder->ignoreXMP = AVIF_TRUE;
    decoder->strictFlags = AVIF_STRICT_DISABLED;
    int ok = avifDecoderSetIOMemory(decoder, data, size) == AVIF_RESULT_OK &&
             avifDecoderParse(decoder) == AVIF_RESULT_OK && avifDecoderNextImage(decoder) == AVIF_RESULT_OK &&
             (int)decoder->image->width == width && (int)decoder->image->height == height;
    if (ok) {
        avifRGBImage rgb;
        avifRGBImageSetDefaults(&rgb, decoder->image);
        rgb.format = AVIF_RGB_FORMAT_RGBA;
        rgb.depth = 8;
        rgb.alphaPremultiplied = AVIF_FALSE;
        rgb.pixels = out;
        rgb.rowBytes = (uint32_t)width * 4;
        ok = avifImageYUVToRGB(decoder->image, &rgb) == AVIF_RESULT_OK;
    }
    avifDecoderDestroy(decoder);
    return ok;
}

static int decode_heic(const uint8_t *data, size_t size, uint8_t *out, int width, int height) {
    struct heif_context *context = heif_context_alloc();
    if (!context) return 0;
    heif_context_set_max_decoding_threads(context, 0);
    struct heif_image_handle *handle = NULL;
    struct heif_image *image = NULL;
    struct heif_decoding_options *options = heif_decoding_options_alloc();
    options->convert_hdr_to_8bit = 1;
    options->strict_decoding = 1;
    int ok = heif_context_read_from_memory_without_copy(context, data, size, NULL).code == heif_error_Ok &&
             heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok &&
             heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, options).code ==
                 heif_error_Ok;
    int stride = 0;
    const uint8_t *plane = ok ? heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride) : NULL;
    ok = ok && plane && heif_image_get_width(image, heif_channel_interleaved) == width &&
         heif_image_get_height(image, heif_channel_interleaved) == height && stride >= width * 4;
    if (ok) {
        for (int y = 0; y < height; y++) memcpy(out + (size_t)y * width * 4, plane + (size_t)y * stride, (size_t)width * 4);
    }
    if (image) heif_image_release(image);
    heif_decoding_options_free(options);
    if (handle) heif_image_handle_release(handle);
    heif_context_free(context);
    return ok;
}

static int decode_jxl(const uint8_t *data, size_t size, uint8_t *out, int width, int height) {
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    if (!decoder) return 0;
    int events = JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | JXL_DEC_FRAME | JXL_DEC_FULL_IMAGE;
    int ok = JxlDecoderSubscribeEvents(decoder, events) == JXL_DEC_SUCCESS &&
             JxlDecoderSetUnpremultiplyAlpha(decoder, JXL_TRUE) == JXL_DEC_SUCCESS &&
             JxlDecoderSetInput(decoder, data, size) == JXL_DEC_SUCCESS;
    JxlDecoderCloseInput(decoder);
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    int frames = 0;
    while (ok) {
        JxlDecoderStatus status = JxlDecoderProcessInput(decoder);
        if (status == JXL_DEC_SUCCESS) break;
        if (status == JXL_DEC_BASIC_INFO || status == JXL_DEC_COLOR_ENCODING || status == JXL_DEC_FRAME) continue;
        if (status == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t needed = 0;
            ok = JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS &&
                 needed == (size_t)width * height * 4 &&
                 JxlDecoderSetImageOutBuffer(decoder, &format, out, needed) == JXL_DEC_SUCCESS;
        } else if (status == JXL_DEC_FULL_IMAGE) {
            frames++;
        } else {
            ok = 0;
        }
    }
    JxlDecoderDestroy(decoder);
    return ok && frames == 1;
}

/* Area average of RGBA `src` (width x height) into `dst` (dw x dh): each
 * output pixel the mean of the source area it covers, fractional edges
 * weighted, summed in float for each output row. */
static void area_average(const uint8_t *src, int width, int height, uint8_t *dst, int dw, int dh, float *rows) {
    double sx = (double)width / dw, sy = (double)height / dh;
    for (int oy = 0; oy < dh; oy++) {
        double y0 = oy * sy, y1 = y0 + sy;
        float *acc = rows;
        memset(acc, 0, sizeof(float) * (size_t)dw * 4);
        for (int y = (int)y0; y < height && y < y1; y++) {
            double wy = (y + 1 < y1 ? y + 1 : y1) - (y > y0 ? y : y0);
            const uint8_t *row = src + (size_t)y * width * 4;
            for (int ox = 0; ox < dw; ox++) {
                double x0 = ox * sx, x1 = x0 + sx;
                float sum[4] = {0, 0, 0, 0};
                for (int x = (int)x0; x < width && x < x1; x++) {
                    float wx = (float)((x + 1 < x1 ? x + 1 : x1) - (x > x0 ? x : x0));
                    const uint8_t *p = row + (size_t)x * 4;
                    sum[0] += wx * p[0]; sum[1] += wx * p[1]; sum[2] += wx * p[2]; sum[3] += wx * p[3];
                }
                for (int c = 0; c < 4; c++) acc[ox * 4 + c] += (float)wy * sum[c];
            }
        }
        float scale = (float)(1.0 / (sx * sy));
        for (int i = 0; i < dw * 4; i++) {
            float v = acc[i] * scale + 0.5f;
            dst[(size_t)oy * dw * 4 + i] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 7) {
        fprintf(stderr, "usage: %s avif|heic|jxl FILE RUNS recycled|fresh [WIDTH HEIGHT]\n", argv[0]);
        return 2;
    }
    const char *format = argv[1];
    int (*decode)(const uint8_t *, size_t, uint8_t *, int, int) =
        strcmp(format, "avif") == 0 ? decode_avif : strcmp(format, "heic") == 0 ? decode_heic
        : strcmp(format, "jxl") == 0 ? decode_jxl : NULL;
    if (!decode) { fprintf(stderr, "unknown format %s\n", format); return 2; }
    size_t size = 0;
    uint8_t *data = read_file(argv[2], &size);
    if (!data) { fprintf(stderr, "cannot read %s\n", argv[2]); return 1; }
    int runs = atoi(argv[3]);
    int recycled = strcmp(argv[4], "recycled") == 0;
    if (runs < 1) runs = 1;
    int width = 0, height = 0;
    if (!image_size(format, data, size, &width, &height)) { fprintf(stderr, "cannot read the header\n"); return 1; }
    int dw = argc == 7 ? atoi(argv[5]) : width, dh = argc == 7 ? atoi(argv[6]) : height;
    int resizes = dw != width || dh != height;
    size_t bytes = (size_t)width * height * 4;
    uint8_t *buffer = recycled ? malloc(bytes) : NULL;
    uint8_t *small = resizes ? malloc((size_t)dw * dh * 4) : NULL;
    float *rows = resizes ? malloc(sizeof(float) * (size_t)dw * 4) : NULL;
    double *times = malloc(sizeof(double) * (size_t)runs);
    uint64_t checksum = 0;
    for (int run = 0; run < runs; run++) {
        double start = now_ms();
        uint8_t *out = recycled ? buffer : malloc(bytes);
        if (!out || !decode(data, size, out, width, height)) { fprintf(stderr, "decode failed\n"); return 1; }
        if (resizes) area_average(out, width, height, small, dw, dh, rows);
        times[run] = now_ms() - start;
        if (run == runs - 1) {
            const uint8_t *result = resizes ? small : out;
            size_t count = (size_t)dw * dh * 4;
            checksum = 0xcbf29ce484222325ULL;
            for (size_t i = 0; i < count; i++) { checksum ^= result[i]; checksum *= 0x100000001b3ULL; }
        }
        if (!recycled) free(out);
    }
    qsort(times, (size_t)runs, sizeof(double), compare_doubles);
    printf("format=%s width=%d height=%d out_width=%d out_height=%d runs=%d best_ms=%.3f median_ms=%.3f checksum=%016llx\n",
           format, width, height, dw, dh, runs, times[0], times[runs / 2], (unsigned long long)checksum);
    free(times); free(rows); free(small); free(buffer); free(data);
    return 0;
}
