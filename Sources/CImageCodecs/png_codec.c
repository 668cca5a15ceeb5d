#include "aiv_codecs.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t offset;
    /* While the last row is read: the offset reads may not go past (libpng
     * inflates the rest of the stream inside that call, to its end). */
    int budget_armed;
    size_t budget_end;
    volatile int over_budget;
} aiv_png_reader;

typedef struct {
    char *message;          /* points into the result's message buffer */
    size_t message_size;
    aiv_stage stage;
} aiv_png_error_context;

static void aiv_png_error(png_structp png, png_const_charp message) {
    aiv_png_error_context *ctx = (aiv_png_error_context *)png_get_error_ptr(png);
    snprintf(ctx->message, ctx->message_size, "%s", message ? message : "libpng error");
    png_longjmp(png, 1);
}

static void aiv_png_warning(png_structp png, png_const_charp message) {
    /* Warnings (bad ancillary-chunk CRCs and the like) are not failures in
     * libpng's own reference tools; keep them off stderr. */
    (void)png; (void)message;
}

static void aiv_png_read(png_structp png, png_bytep out, size_t length) {
    aiv_png_reader *reader = (aiv_png_reader *)png_get_io_ptr(png);
    if (reader->budget_armed && length > reader->budget_end - reader->offset) {
        reader->over_budget = 1;
        png_error(png, "more compressed image data after the last row than the image needs");
    }
    if (length > reader->size - reader->offset) {
        png_error(png, "unexpected end of data");
    }
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
}

/* libpng's allocations go through here, to record the largest request. */
static png_voidp aiv_png_malloc(png_structp png, png_alloc_size_t size) {
    aiv_decode_result *result = (aiv_decode_result *)png_get_mem_ptr(png);
    if (result && size > result->largest_codec_allocation) result->largest_codec_allocation = size;
    return malloc(size);
}

static void aiv_png_free(png_structp png, png_voidp pointer) {
    (void)png;
    free(pointer);
}

/* The bytes of compressed image data (the IDAT chunks' data) in the file
 * at or after offset `from`, walking the chunks by their lengths (a cut or
 * malformed chunk ends the walk: libpng fails on it by itself). */
static uint64_t aiv_png_idat_bytes(const uint8_t *data, size_t size, size_t from) {
    uint64_t total = 0;
    size_t offset = 8;
    while (size >= 8 && offset <= size - 8) {
        uint32_t length = ((uint32_t)data[offset] << 24) | ((uint32_t)data[offset + 1] << 16) |
                          ((uint32_t)data[offset + 2] << 8) | (uint32_t)data[offset + 3];
        const uint8_t *type = data + offset + 4;
        size_t start = offset + 8;
        size_t end = length > size - start ? size : start + length;
        if (memcmp(type, "IDAT", 4) == 0) {
            size_t first = start > from ? start : from;
            if (end > first) total += end - first;
        }
        if (memcmp(type, "IEND", 4) == 0 || length > size - start || size - start - length < 4) break;
        offset = start + length + 4;  /* past the CRC */
    }
    return total;
}

/* The bytes the filtered rows of an image take before compression (a
 * filter byte per row, per pass for Adam7): all a deflate stream of its
 * image data can need to hold. */
static uint64_t aiv_png_raw_size(png_uint_32 width, png_uint_32 height, int bit_depth, int color_type,
                                 int interlace) {
    int channels = color_type == PNG_COLOR_TYPE_RGB ? 3
                 : color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                 : color_type == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 1;  /* grey, palette */
    uint64_t bits = (uint64_t)channels * (uint64_t)bit_depth;
    if (interlace == PNG_INTERLACE_NONE) return (uint64_t)height * (1 + ((uint64_t)width * bits + 7) / 8);
    uint64_t total = 0;
    for (int pass = 0; pass < 7; pass++) {
        uint64_t cols = PNG_PASS_COLS(width, pass), rows = PNG_PASS_ROWS(height, pass);
        if (cols > 0 && rows > 0) total += rows * (1 + (cols * bits + 7) / 8);
    }
    return total;
}

/* How much libpng may read while it decodes the last row: inside that call
 * it inflates the rest of the stream to its end, all of it (the bomb's
 * gigabytes), so the reads are bounded there: two rows' raw size (the row's
 * own data, however it is compressed), the read-ahead (IDAT data is read
 * AIV_PNG_IDAT_READ_SIZE at a time) and 64 KiB for a stream's end and the
 * chunk headers of small IDATs. At deflate's best ratio, about 1,000 to 1,
 * what is inflated past the rows stays under 80 MB for any image. */
#define AIV_PNG_IDAT_READ_SIZE 8192
#define AIV_PNG_LAST_ROW_SLACK (65536 + AIV_PNG_IDAT_READ_SIZE)

/* A checkpoint of the row loop: the allocator's progress (memory), then the
 * row sink (rows [first, first + count) final). */
static void aiv_png_checkpoint(png_structp png, const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                               uint8_t *pixels, size_t pixels_size, size_t row_bytes, uint32_t first,
                               uint32_t count, int *progress_done, volatile aiv_stage *stage,
                               aiv_decode_result *result) {
    if (!*progress_done && allocator->progress) {
        *progress_done = allocator->progress(pixels, pixels_size, (size_t)(first + count) * row_bytes);
        if (*progress_done < 0) {
            *stage = AIV_STAGE_MEMORY;
            snprintf(result->message, sizeof(result->message), "out of memory while decoding");
            png_longjmp(png, 1);
        }
    }
    if (sink && sink->rows(sink->context, pixels, row_bytes, first, count) != AIV_ROWS_CONTINUE) {
        *stage = AIV_STAGE_STOPPED;
        snprintf(result->message, sizeof(result->message), "stopped: no request waits for the image");
        png_longjmp(png, 1);
    }
}

int aiv_png_decode(const uint8_t *data, size_t size, uint64_t max_pixels,
                   const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                   aiv_decode_result *result) {
    memset(result, 0, sizeof(*result));
    result->scale_denom = 1;
    result->layout = AIV_LAYOUT_RGBA;

    aiv_png_reader reader = { data, size, 0 };
    aiv_png_error_context ctx = { result->message, sizeof(result->message), AIV_STAGE_HEADER };
    /* Locals changed after setjmp and read after longjmp must be volatile. */
    png_structp volatile png = NULL;
    png_infop volatile info = NULL;
    png_bytep *volatile rows = NULL;
    uint8_t *volatile pixels = NULL;
    volatile size_t pixels_size = 0;
    volatile aiv_stage stage = AIV_STAGE_HEADER;

    if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
        snprintf(result->message, sizeof(result->message), "not a PNG signature");
        result->stage = AIV_STAGE_HEADER;
        return -1;
    }

    png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &ctx, aiv_png_error, aiv_png_warning,
                                   result, aiv_png_malloc, aiv_png_free);
    if (!png) {
        snprintf(result->message, sizeof(result->message), "out of memory creating the PNG reader");
        result->stage = AIV_STAGE_MEMORY;
        return -1;
    }
    info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct((png_structpp)&png, NULL, NULL);
        snprintf(result->message, sizeof(result->message), "out of memory creating the PNG info");
        result->stage = AIV_STAGE_MEMORY;
        return -1;
    }

    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct((png_structpp)&png, (png_infopp)&info, NULL);
        free(rows);
        if (pixels) allocator->release(pixels, pixels_size);
        result->pixels = NULL;
        result->stage = reader.over_budget ? AIV_STAGE_INFLATE : stage;
        return -1;
    }

    png_set_read_fn(png, &reader, aiv_png_read);
    /* Every ancillary chunk but tRNS is skipped unread (num_chunks -1: all the
     * chunks libpng knows, and unknown ones). This decoder uses none of them,
     * and libpng allocates the claimed length of a text, pCAL, sCAL, sPLT or
     * iCCP chunk before reading it: a lying length in a 1.7 KB file cost
     * 1.9 GB (found by Fuzz/run). Skipping reads through a fixed buffer. */
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    /* Also bound what any chunk may allocate, for the chunks libpng still
     * reads (no chunk can be longer than the whole input). */
    png_set_chunk_malloc_max(png, (png_alloc_size_t)size);
    /* IDAT data is read (and inflated) this much at a time, so that what is
     * left unread after the last row tells how much the stream still holds
     * (see AIV_PNG_TRAILING_IDAT_LIMIT). */
    png_set_compression_buffer_size(png, AIV_PNG_IDAT_READ_SIZE);
    png_read_info(png, info);

    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    result->source_width = width;
    result->source_height = height;

    if ((uint64_t)width * (uint64_t)height > max_pixels) {
        snprintf(result->message, sizeof(result->message),
                 "%ux%u is %llu pixels, over the limit of %llu",
                 (unsigned)width, (unsigned)height,
                 (unsigned long long)width * height, (unsigned long long)max_pixels);
        stage = AIV_STAGE_LIMITS;
        png_longjmp(png, 1);
    }
    /* A decompression bomb is a small image with a lot of compressed data
     * (8 MB of IDAT for 64x64 pixels inflates to gigabytes): refused before
     * anything is inflated when the data is more than deflate can take to
     * hold the rows (their raw size, plus an eighth for fixed-Huffman
     * codes, plus block and stream headers). */
    uint64_t raw = aiv_png_raw_size(width, height, bit_depth, color_type, interlace);
    uint64_t compressed = aiv_png_idat_bytes(data, size, 0);
    if (compressed > raw + raw / 8 + 65536) {
        snprintf(result->message, sizeof(result->message),
                 "%llu bytes of compressed image data for %ux%u pixels, which need at most %llu",
                 (unsigned long long)compressed, (unsigned)width, (unsigned)height,
                 (unsigned long long)(raw + raw / 8 + 65536));
        stage = AIV_STAGE_INFLATE;
        png_longjmp(png, 1);
    }

    /* Everything to 8-bit RGBA. */
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (bit_depth == 16) png_set_scale_16(png);
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    if (!(color_type & PNG_COLOR_MASK_ALPHA) && !png_get_valid(png, info, PNG_INFO_tRNS)) {
        png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
        result->opaque = 1;
    }
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);

    size_t row_bytes = png_get_rowbytes(png, info);
    if (row_bytes != (size_t)width * 4) {
        snprintf(result->message, sizeof(result->message),
                 "unexpected row size %zu after conversion to RGBA", row_bytes);
        png_longjmp(png, 1);
    }

    stage = AIV_STAGE_MEMORY;
    pixels_size = row_bytes * (size_t)height;
    pixels = allocator->allocate(pixels_size);
    rows = (png_bytep *)malloc(sizeof(png_bytep) * (height ? height : 1));
    if (!pixels || !rows) {
        snprintf(result->message, sizeof(result->message), "out of memory for a %ux%u image",
                 (unsigned)width, (unsigned)height);
        png_longjmp(png, 1);
    }
    for (png_uint_32 y = 0; y < height; y++) rows[y] = pixels + (size_t)y * row_bytes;

    stage = AIV_STAGE_PIXELS;
    /* Interlaced: every pass writes rows all over the buffer, so the
     * allocator's progress is not told (done = 1) and rows are final only
     * in the last pass; before it, checkpoints carry no rows. */
    int progress_done = passes > 1;
    for (int pass = 0; pass < passes; pass++) {
        int last = pass == passes - 1;
        for (png_uint_32 y = 0; y < height;) {
            png_uint_32 count = height - y < 16 ? height - y : 16;
            if (last && y + count == height) {
                /* The image's last row is read alone, with the reads bounded
                 * (see AIV_PNG_LAST_ROW_SLACK). */
                if (count > 1) png_read_rows(png, rows + y, NULL, count - 1);
                size_t left = size - reader.offset, budget = 2 * (row_bytes + 1) + AIV_PNG_LAST_ROW_SLACK;
                reader.budget_end = reader.offset + (budget < left ? budget : left);
                reader.budget_armed = 1;
                png_read_rows(png, rows + height - 1, NULL, 1);
                reader.budget_armed = 0;
            } else {
                png_read_rows(png, rows + y, NULL, count);
            }
            aiv_png_checkpoint(png, allocator, sink, pixels, pixels_size, row_bytes, last ? y : 0, last ? count : 0,
                               &progress_done, &stage, result);
            y += count;
        }
    }
    stage = AIV_STAGE_TRAILER;
    png_read_end(png, NULL);

    png_destroy_read_struct((png_structpp)&png, (png_infopp)&info, NULL);
    free(rows);
    result->pixels = pixels;
    result->pixels_size = pixels_size;
    result->width = width;
    result->height = height;
    result->bytes_per_row = (uint32_t)row_bytes;
    result->stage = AIV_STAGE_NONE;
    return 0;
}

/* ---- Encoding ---- */

typedef struct {
    uint8_t *data;
    size_t size;
    size_t capacity;
    int failed;
} aiv_png_writer;

static void aiv_png_write(png_structp png, png_bytep bytes, size_t length) {
    aiv_png_writer *writer = (aiv_png_writer *)png_get_io_ptr(png);
    if (writer->size + length > writer->capacity) {
        size_t capacity = writer->capacity ? writer->capacity : 4096;
        while (capacity < writer->size + length) capacity *= 2;
        uint8_t *grown = (uint8_t *)realloc(writer->data, capacity);
        if (!grown) {
            writer->failed = 1;
            png_error(png, "out of memory while encoding");
        }
        writer->data = grown;
        writer->capacity = capacity;
    }
    memcpy(writer->data + writer->size, bytes, length);
    writer->size += length;
}

static void aiv_png_flush(png_structp png) { (void)png; }

int aiv_png_encode_rgba(const uint8_t *pixels, uint32_t width, uint32_t height,
                        uint32_t bytes_per_row, int compression_level,
                        aiv_encode_result *result) {
    memset(result, 0, sizeof(*result));
    aiv_png_error_context ctx = { result->message, sizeof(result->message), AIV_STAGE_NONE };
    aiv_png_writer writer = { NULL, 0, 0, 0 };
    aiv_png_writer *volatile writer_ptr = &writer;
    png_structp volatile png = NULL;
    png_infop volatile info = NULL;

    if (width == 0 || height == 0 || bytes_per_row < width * 4u) {
        snprintf(result->message, sizeof(result->message), "invalid image geometry %ux%u", width, height);
        return -1;
    }
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, aiv_png_error, aiv_png_warning);
    if (!png) {
        snprintf(result->message, sizeof(result->message), "out of memory creating the PNG writer");
        return -1;
    }
    info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct((png_structpp)&png, NULL);
        snprintf(result->message, sizeof(result->message), "out of memory creating the PNG info");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct((png_structpp)&png, (png_infopp)&info);
        free(writer_ptr->data);
        return -1;
    }
    png_set_write_fn(png, writer_ptr, aiv_png_write, aiv_png_flush);
    if (compression_level >= 0 && compression_level <= 9) png_set_compression_level(png, compression_level);
    png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) {
        png_write_row(png, (png_const_bytep)(pixels + (size_t)y * bytes_per_row));
    }
    png_write_end(png, NULL);
    png_destroy_write_struct((png_structpp)&png, (png_infopp)&info);
    result->data = writer.data;
    result->size = writer.size;
    return 0;
}
