#include "aiv_codecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
    size_t message_size;
    /* A preview of a file still arriving: the end of the data is not an error. */
    int tolerates_end_of_data;
} aiv_jpeg_error_mgr;

static void aiv_jpeg_error_exit(j_common_ptr cinfo) {
    aiv_jpeg_error_mgr *err = (aiv_jpeg_error_mgr *)cinfo->err;
    char buffer[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buffer);
    snprintf(err->message, err->message_size, "%s", buffer);
    longjmp(err->jump, 1);
}

/* Warnings (msg_level -1: "Corrupt JPEG data", "Premature end of JPEG file")
 * end the decode, as `djpeg -strict` does: libjpeg would otherwise fill the
 * damaged part in and return an image that looks like a success. Trace
 * messages (level >= 0) are dropped; nothing is printed to stderr. */
static void aiv_jpeg_emit_message(j_common_ptr cinfo, int msg_level) {
    aiv_jpeg_error_mgr *err = (aiv_jpeg_error_mgr *)cinfo->err;
    if (msg_level < 0 && err->tolerates_end_of_data && cinfo->err->msg_code == JWRN_JPEG_EOF) {
        return; /* libjpeg ends the image with the scans it has: the preview */
    }
    if (msg_level < 0) {
        cinfo->err->num_warnings++;
        aiv_jpeg_error_exit(cinfo);
    }
}

static void aiv_jpeg_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void aiv_jpeg_init_error(aiv_jpeg_error_mgr *err, char *message, size_t message_size) {
    jpeg_std_error(&err->base);
    err->base.error_exit = aiv_jpeg_error_exit;
    err->base.emit_message = aiv_jpeg_emit_message;
    err->base.output_message = aiv_jpeg_output_message;
    err->message = message;
    err->message_size = message_size;
}

/* A limit on the scans of a progressive JPEG. Real encoders write about ten;
 * each scan can make libjpeg pass over every coefficient of the image again,
 * and a valid file can have thousands, each a few bytes: minutes of CPU
 * (TurboJPEG's scan limit and libjpeg-turbo's own fuzzers use this guard). */
typedef struct {
    struct jpeg_progress_mgr base;
    aiv_jpeg_error_mgr *err;
    int max_scans;
    volatile int over_limit;
    /* The row sink, asked at libjpeg's own checkpoints too: a progressive
     * file's scans are all read (and can take most of the time) before the
     * first row comes out. */
    const aiv_row_sink *sink;
    volatile int stopped;
} aiv_jpeg_progress;

static void aiv_jpeg_progress_monitor(j_common_ptr cinfo) {
    aiv_jpeg_progress *progress = (aiv_jpeg_progress *)cinfo->progress;
    j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
    if (dinfo->is_decompressor && dinfo->progressive_mode && dinfo->input_scan_number > progress->max_scans) {
        snprintf(progress->err->message, progress->err->message_size,
                 "more than %d progressive scans", progress->max_scans);
        progress->over_limit = 1;
        longjmp(progress->err->jump, 1);
    }
    if (progress->sink && progress->sink->rows(progress->sink->context, NULL, 0, 0, 0) != AIV_ROWS_CONTINUE) {
        snprintf(progress->err->message, progress->err->message_size, "stopped: no request waits for the image");
        progress->stopped = 1;
        longjmp(progress->err->jump, 1);
    }
}

static int aiv_jpeg_decode_impl(const uint8_t *data, size_t size, uint64_t max_pixels, int max_scans,
                                uint32_t scale_denom, int fancy_upsampling, int tolerates_end_of_data,
                                const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                                aiv_decode_result *result);

int aiv_jpeg_decode(const uint8_t *data, size_t size, uint64_t max_pixels, int max_scans,
                    uint32_t scale_denom, int fancy_upsampling,
                    const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                    aiv_decode_result *result) {
    return aiv_jpeg_decode_impl(data, size, max_pixels, max_scans, scale_denom, fancy_upsampling, 0, allocator, sink, result);
}

int aiv_jpeg_decode_preview(const uint8_t *data, size_t size, uint64_t max_pixels, int max_scans,
                            uint32_t scale_denom, int fancy_upsampling,
                            const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                            aiv_decode_result *result) {
    return aiv_jpeg_decode_impl(data, size, max_pixels, max_scans, scale_denom, fancy_upsampling, 1, allocator, sink, result);
}

static int aiv_jpeg_decode_impl(const uint8_t *data, size_t size, uint64_t max_pixels, int max_scans,
                                uint32_t scale_denom, int fancy_upsampling, int tolerates_end_of_data,
                                const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                                aiv_decode_result *result) {
    memset(result, 0, sizeof(*result));
    result->scale_denom = 1;

    struct jpeg_decompress_struct cinfo;
    aiv_jpeg_error_mgr err;
    uint8_t *volatile pixels = NULL;
    volatile size_t pixels_size = 0;
    volatile aiv_stage stage = AIV_STAGE_HEADER;

    if (size == 0) {
        snprintf(result->message, sizeof(result->message), "empty input");
        result->stage = AIV_STAGE_HEADER;
        return -1;
    }

    aiv_jpeg_progress progress;
    memset(&progress, 0, sizeof(progress));
    progress.base.progress_monitor = aiv_jpeg_progress_monitor;
    progress.err = &err;
    progress.max_scans = max_scans > 0 ? max_scans : 1;
    progress.sink = sink;

    cinfo.err = &err.base;
    aiv_jpeg_init_error(&err, result->message, sizeof(result->message));
    err.tolerates_end_of_data = tolerates_end_of_data;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        if (pixels) allocator->release(pixels, pixels_size);
        result->pixels = NULL;
        result->stage = progress.over_limit ? AIV_STAGE_SCANS : progress.stopped ? AIV_STAGE_STOPPED : stage;
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    cinfo.progress = &progress.base;
    jpeg_mem_src(&cinfo, (const unsigned char *)data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);

    result->source_width = cinfo.image_width;
    result->source_height = cinfo.image_height;
    if ((uint64_t)cinfo.image_width * (uint64_t)cinfo.image_height > max_pixels) {
        snprintf(result->message, sizeof(result->message),
                 "%ux%u is %llu pixels, over the limit of %llu",
                 (unsigned)cinfo.image_width, (unsigned)cinfo.image_height,
                 (unsigned long long)cinfo.image_width * cinfo.image_height,
                 (unsigned long long)max_pixels);
        stage = AIV_STAGE_LIMITS;
        longjmp(err.jump, 1);
    }

    unsigned denom = (scale_denom == 2 || scale_denom == 4 || scale_denom == 8) ? scale_denom : 1;
    cinfo.scale_num = 1;
    cinfo.scale_denom = denom;
    cinfo.dct_method = JDCT_ISLOW;
    /* The fast display path skips smoothing the chroma when it scales (a
     * tenth of the time; its resize averages anyway); the quality path
     * keeps it (without it, chroma edges come out blocky at 1/2 and 1/4). */
    if (denom > 1 && !fancy_upsampling) cinfo.do_fancy_upsampling = FALSE;

    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        cinfo.out_color_space = JCS_CMYK;
        result->layout = cinfo.saw_Adobe_marker ? AIV_LAYOUT_CMYK_INVERTED : AIV_LAYOUT_CMYK;
    } else {
        cinfo.out_color_space = JCS_EXT_RGBA;
        result->layout = AIV_LAYOUT_RGBA;
    }

    jpeg_start_decompress(&cinfo);
    if (cinfo.output_components != 4) {
        snprintf(result->message, sizeof(result->message),
                 "unexpected %d output components", cinfo.output_components);
        longjmp(err.jump, 1);
    }

    size_t row_bytes = (size_t)cinfo.output_width * 4;
    stage = AIV_STAGE_MEMORY;
    pixels_size = row_bytes * cinfo.output_height;
    pixels = allocator->allocate(pixels_size);
    if (!pixels) {
        snprintf(result->message, sizeof(result->message), "out of memory for a %ux%u image",
                 (unsigned)cinfo.output_width, (unsigned)cinfo.output_height);
        longjmp(err.jump, 1);
    }

    stage = AIV_STAGE_PIXELS;
    JSAMPROW rows[16];
    int progress_done = allocator->progress == NULL;
    while (cinfo.output_scanline < cinfo.output_height) {
        if (!progress_done) {
            progress_done = allocator->progress(pixels, pixels_size, (size_t)cinfo.output_scanline * row_bytes);
            if (progress_done < 0) {
                stage = AIV_STAGE_MEMORY;
                snprintf(result->message, sizeof(result->message), "out of memory while decoding");
                longjmp(err.jump, 1);
            }
        }
        JDIMENSION first = cinfo.output_scanline;
        int count = 0;
        for (; count < 16 && first + (JDIMENSION)count < cinfo.output_height; count++) {
            rows[count] = pixels + (size_t)(first + count) * row_bytes;
        }
        JDIMENSION read = jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)count);
        if (read == 0) {
            snprintf(result->message, sizeof(result->message), "decoder made no progress");
            longjmp(err.jump, 1);
        }
        if (sink && sink->rows(sink->context, pixels, row_bytes, first, read) != AIV_ROWS_CONTINUE) {
            snprintf(result->message, sizeof(result->message), "stopped: no request waits for the image");
            progress.stopped = 1;
            longjmp(err.jump, 1);
        }
    }
    stage = AIV_STAGE_TRAILER;
    jpeg_finish_decompress(&cinfo);

    result->pixels = pixels;
    result->pixels_size = pixels_size;
    result->width = cinfo.output_width;
    result->height = cinfo.output_height;
    result->bytes_per_row = (uint32_t)row_bytes;
    result->scale_denom = denom;
    result->stage = AIV_STAGE_NONE;
    jpeg_destroy_decompress(&cinfo);
    return 0;
}

int aiv_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height,
                    uint32_t bytes_per_row, aiv_jpeg_input input, int quality,
                    int progressive, const uint8_t *app1, size_t app1_size,
                    aiv_encode_result *result) {
    memset(result, 0, sizeof(*result));
    struct jpeg_compress_struct cinfo;
    aiv_jpeg_error_mgr err;
    /* Owned by jpeg_mem_dest while encoding; its address escapes, so it is
     * read from memory (not a register) after a longjmp. */
    unsigned char *buffer = NULL;
    unsigned long out_size = 0;

    if (width == 0 || height == 0) {
        snprintf(result->message, sizeof(result->message), "invalid image geometry %ux%u", width, height);
        return -1;
    }
    cinfo.err = &err.base;
    aiv_jpeg_init_error(&err, result->message, sizeof(result->message));
    if (setjmp(err.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buffer, &out_size);
    cinfo.image_width = width;
    cinfo.image_height = height;
    switch (input) {
    case AIV_JPEG_INPUT_GRAY:
        cinfo.input_components = 1; cinfo.in_color_space = JCS_GRAYSCALE; break;
    case AIV_JPEG_INPUT_CMYK:
        cinfo.input_components = 4; cinfo.in_color_space = JCS_CMYK; break;
    default:
        cinfo.input_components = 4; cinfo.in_color_space = JCS_EXT_RGBA; break;
    }
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    if (app1 && app1_size > 0 && app1_size <= 65533) {
        jpeg_write_marker(&cinfo, JPEG_APP0 + 1, app1, (unsigned)app1_size);
    }
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * bytes_per_row);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    result->data = buffer;
    result->size = out_size;
    jpeg_destroy_compress(&cinfo);
    return 0;
}
