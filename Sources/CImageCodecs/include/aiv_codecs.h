/*
 * CImageCodecs: the only C code in the package.
 *
 * libpng and libjpeg report fatal errors with longjmp. Swift cannot call
 * setjmp, and a longjmp must never cross a Swift frame, so each whole decode
 * or encode (header to last scanline) runs inside one C function here that
 * owns its setjmp. Everything else (sniffing, orientation, colour conversion,
 * resizing, GIF, error types) is Swift.
 *
 * Pixel buffers come from the caller's aiv_pixel_allocator (the Swift side,
 * which maps large buffers with huge pages and recycles them); encoded
 * buffers are malloc'd and freed with free().
 */
#ifndef AIV_CODECS_H
#define AIV_CODECS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a decode stopped. */
typedef enum {
    AIV_STAGE_NONE = 0,
    AIV_STAGE_HEADER = 1,   /* signature, header, or parameters */
    AIV_STAGE_LIMITS = 2,   /* rejected by the pixel limit, before any pixel buffer */
    AIV_STAGE_PIXELS = 3,   /* image data (scanlines) */
    AIV_STAGE_TRAILER = 4,  /* after the last scanline (end of stream) */
    AIV_STAGE_MEMORY = 5,   /* an allocation failed */
    AIV_STAGE_SCANS = 6,    /* more progressive scans than allowed (a limit, not the pixel one) */
    AIV_STAGE_INFLATE = 7,  /* PNG: more compressed image data than its pixels can need (a limit) */
    AIV_STAGE_STOPPED = 8   /* the row sink asked the decode to stop (nobody wants it any more) */
} aiv_stage;

/* What the decoded buffer holds. */
typedef enum {
    AIV_LAYOUT_RGBA = 0,         /* 8-bit RGBA, straight alpha */
    AIV_LAYOUT_CMYK = 1,         /* 8-bit CMYK from libjpeg (convert in Swift) */
    AIV_LAYOUT_CMYK_INVERTED = 2 /* Adobe APP14 CMYK, stored inverted */
} aiv_layout;

typedef struct {
    /* Output */
    uint8_t *pixels;            /* from the allocator; the caller owns it */
    size_t pixels_size;         /* bytes allocated */
    uint32_t width;             /* decoded width (after DCT scaling) */
    uint32_t height;
    uint32_t bytes_per_row;
    uint32_t source_width;      /* as in the file header */
    uint32_t source_height;
    uint32_t scale_denom;       /* JPEG DCT scale: 1, 2, 4 or 8 */
    aiv_layout layout;
    /* 1 when the source says every pixel is opaque (PNG: a colour type
     * without alpha and no tRNS, so the alpha byte is the 0xff filler);
     * 0 when it may not be (the caller then looks at the pixels). */
    uint32_t opaque;
    /* The largest single allocation the codec library asked for (PNG only;
     * 0 otherwise): a lying chunk length must not become an allocation. */
    size_t largest_codec_allocation;
    /* Error */
    aiv_stage stage;
    char message[200];
} aiv_decode_result;

/* Where a decode gets its pixel buffer, and where it gives one back when the
 * decode fails after allocating. allocate returns NULL when memory cannot be
 * had; neither function may longjmp. */
typedef struct {
    uint8_t *(*allocate)(size_t size);
    void (*release)(uint8_t *pixels, size_t size);
    /* Optional (may be NULL). A decoder that writes a buffer front to back
     * calls it between rows with how many bytes from the start it has
     * written; the allocator may then put other memory under the part not
     * yet written (its contents stay undefined). Returns 0 to be called
     * again, 1 when it need not be, and -1 when the buffer lost memory it
     * could not map again: the decode must fail (out of memory). */
    int (*progress)(uint8_t *pixels, size_t size, size_t written);
} aiv_pixel_allocator;

/* The one way rows leave libjpeg-turbo and libpng: a decode calls the sink
 * at every checkpoint (every 16 output rows; while libjpeg reads a
 * progressive file's scans, which it does before the first row; after each
 * batch of an interlaced PNG's passes) with the rows that became final
 * since the last call: rows [first, first + count) of the output buffer
 * `pixels`, `bytes_per_row` apart (count 0: a checkpoint with no new row).
 *
 * Designed for three users: stopping a decode nobody waits for any more
 * (return AIV_ROWS_STOP: the decode fails at AIV_STAGE_STOPPED, its buffer
 * released, within one checkpoint); a transform of the rows in place as they
 * come (a colour transform while they are in cache); and a consumer that
 * reads them as they come (a resampler's vertical pass). It is called after
 * the allocator's `progress` (memory first, then rows), never longjmps, and
 * sees each row once, top to bottom, after the row is final (an interlaced
 * PNG's rows only after its last pass). */
enum { AIV_ROWS_CONTINUE = 0, AIV_ROWS_STOP = 1 };
typedef struct {
    void *context;
    int (*rows)(void *context, uint8_t *pixels, size_t bytes_per_row, uint32_t first, uint32_t count);
} aiv_row_sink;

/* Moves the pages of [from, from + size) to [to, to + size), `chunk` bytes
 * (a multiple of the page size) at a time, replacing what was mapped there:
 * mremap(MREMAP_MAYMOVE | MREMAP_FIXED), which Swift cannot call (it is
 * variadic). A chunk never spans two mappings, which mremap refuses.
 * Returns the bytes moved from the start: that part of `from` is no longer
 * mapped (the caller must not unmap it: another mapping may be there by
 * now); the rest of `from` is untouched. A chunk that fails to move is
 * mapped afresh in the destination if the kernel unmapped it (anonymous,
 * huge pages advised) and nothing else has been mapped there since; if
 * that cannot be done, *lost is set to its length: the `*lost` bytes at
 * to + moved are not the caller's any more and must be neither written
 * nor unmapped. Otherwise *lost is 0. The destination past the failed
 * chunk is left as it was. */
size_t aiv_move_pages(uint8_t *from, size_t size, uint8_t *to, size_t chunk, size_t *lost);

/* Maps fresh anonymous memory (huge pages advised) at exactly [at, at + size)
 * if nothing is mapped anywhere there (MAP_FIXED_NOREPLACE); returns 0, or
 * -1 and leaves whatever is there alone. */
int aiv_map_hole(uint8_t *at, size_t size);

/* Returns free heap memory to the kernel (glibc's malloc_trim(0), which
 * Swift's Glibc module does not import); 1 when memory was released. */
int aiv_trim_heap(void);

/* Decode a whole PNG into 8-bit RGBA (straight alpha). Every colour type and
 * bit depth, Adam7, palette with tRNS; 16-bit scaled to 8. No gamma or
 * colour-management transform: sample values are returned as stored.
 * Inflating is bounded by the pixels: a file whose IDAT chunks hold more
 * compressed data than its rows can need (their raw size, plus deflate's
 * worst-case growth) fails at AIV_STAGE_INFLATE before any pixel buffer,
 * and after the last row at most a few KiB more are inflated to check the
 * stream's end (a decompression bomb costs its reading, not its inflating).
 * `sink` may be NULL. Returns 0 on success, -1 on failure (see
 * result->stage and message). */
int aiv_png_decode(const uint8_t *data, size_t size, uint64_t max_pixels,
                   const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                   aiv_decode_result *result);

/* Decode a whole JPEG at 1/scale_denom of its size (1, 2, 4 or 8: libjpeg's
 * DCT scaling; the caller chooses it, Swift's ShrinkOnLoad, the one rule).
 * fancy_upsampling: smooth chroma upsampling on a scaled decode (a full-size
 * decode always has it; the fast display path turns it off when scaling).
 * Any libjpeg warning (corrupt data, premature end) is a failure, as with
 * `djpeg -strict`. Output layout is RGBA, or CMYK for CMYK/YCCK files.
 * A progressive file with more than max_scans scans fails at stage LIMITS. */
int aiv_jpeg_decode(const uint8_t *data, size_t size, uint64_t max_pixels, int max_scans,
                    uint32_t scale_denom, int fancy_upsampling,
                    const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                    aiv_decode_result *result);

/* The same, for a preview of a progressive JPEG still arriving: the data
 * ends after some scans (it is cut at a scan's start), and libjpeg's
 * "premature end" warning is not an error here: the image comes out with
 * the scans received. Every other warning still fails the decode. */
int aiv_jpeg_decode_preview(const uint8_t *data, size_t size, uint64_t max_pixels, int max_scans,
                            uint32_t scale_denom, int fancy_upsampling,
                            const aiv_pixel_allocator *allocator, const aiv_row_sink *sink,
                            aiv_decode_result *result);

typedef struct {
    uint8_t *data;              /* malloc'd; caller frees with free() */
    size_t size;
    char message[200];
} aiv_encode_result;

/* Encode 8-bit RGBA (straight alpha) as an 8-bit RGBA PNG. */
int aiv_png_encode_rgba(const uint8_t *pixels, uint32_t width, uint32_t height,
                        uint32_t bytes_per_row, int compression_level,
                        aiv_encode_result *result);

/* Input layouts for aiv_jpeg_encode. */
typedef enum {
    AIV_JPEG_INPUT_RGBA = 0,    /* 4 bytes per pixel, alpha ignored */
    AIV_JPEG_INPUT_GRAY = 1,    /* 1 byte per pixel */
    AIV_JPEG_INPUT_CMYK = 2     /* 4 bytes per pixel, written with an Adobe marker */
} aiv_jpeg_input;

/* Encode as JPEG. app1 (may be NULL) is written as an APP1 segment (EXIF). */
int aiv_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height,
                    uint32_t bytes_per_row, aiv_jpeg_input input, int quality,
                    int progressive, const uint8_t *app1, size_t app1_size,
                    aiv_encode_result *result);

/*
 * The colour fast path for matrix-shaper profiles (colour_kernel.c): per
 * pixel an input table to linear light, a 3x3 matrix to sRGB's linear
 * primaries, sRGB's curve (evaluated) to bytes. In C for the same reason as the
 * codecs' loops: it is the inner loop of a full-size decode and the
 * compiler vectorises the matrix and the clamps here, not in Swift. Swift
 * builds the tables from Little CMS (the parser and the reference) and
 * checks the result against it (ColorConversion.swift).
 */
typedef struct {
    float to_linear[3][256];     /* per channel: the source curve at v / 255 */
    float matrix[9];             /* row-major: sRGB linear = matrix x source linear */
} aiv_matrix_shaper;            /* sRGB's own curve is evaluated by the kernel (colour_kernel.c) */

/* Where Swift fills the tables (it imports no array this large). */
static inline float *aiv_matrix_shaper_to_linear(aiv_matrix_shaper *k) { return &k->to_linear[0][0]; }
static inline float *aiv_matrix_shaper_matrix(aiv_matrix_shaper *k) { return k->matrix; }

/* Converts rows of RGBA pixels in place (alpha left as it is). */
void aiv_matrix_shaper_apply(const aiv_matrix_shaper *kernel, uint8_t *pixels,
                             size_t width, size_t height, size_t bytes_per_row);

/* For the resampler (ImageResizer's LinearSource): `count` opaque RGBA
 * pixels read through `tables` (768 floats: red's 256 entries, then
 * green's, then blue's) and the row-major 3x3 `matrix`, clipped to 0...1,
 * written to `out` as 4 floats a pixel (alpha 1). In C for the kernel's
 * reason: here the compiler vectorises the matrix (about 0.2 ns a pixel,
 * against 0.9 as scalar Swift). */
void aiv_matrix_shaper_expand_opaque(const uint8_t *source, size_t count, const float *tables,
                                     const float *matrix, float *out);

#ifdef __cplusplus
}
#endif
#endif
