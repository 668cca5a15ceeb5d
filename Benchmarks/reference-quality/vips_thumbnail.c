/* The libvips peer of `asyncimage-bench quality`, timed in-process (its
 * start-up would dominate a command-line run): vips_thumbnail_buffer, as
 * vipsthumbnail calls it, fitting each photo inside SIZE x SIZE from bytes
 * in memory, then the PNG written outside the timing.
 *
 *   vips_thumbnail default|linear SIZE RUNS OUT_DIR PHOTO...
 *
 * Prints one line per photo: name=<file> cpu_ms=<best of RUNS, the process's CPU: libvips works on its own threads>
 * width=<w> height=<h>. "linear" is vipsthumbnail --linear (shrinks in
 * linear light; libvips then decodes JPEG at full size).
 */
#include <vips/vips.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double process_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 6 || VIPS_INIT(argv[0])) {
        fprintf(stderr, "usage: vips_thumbnail default|linear SIZE RUNS OUT_DIR PHOTO...\n");
        return 2;
    }
    /* One thread, as the other sides: CPU per thumbnail, not wall time. */
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    int linear = strcmp(argv[1], "linear") == 0;
    int size = atoi(argv[2]);
    int runs = atoi(argv[3]);
    const char *out_dir = argv[4];
    for (int i = 5; i < argc; i++) {
        gchar *data = NULL;
        gsize length = 0;
        if (!g_file_get_contents(argv[i], &data, &length, NULL)) return 1;
        double best = 1e30;
        VipsImage *kept = NULL;
        for (int r = 0; r < runs; r++) {
            double start = process_cpu_ms();
            VipsImage *thumb = NULL;
            if (vips_thumbnail_buffer(data, length, &thumb, size, "height", size, "linear", linear, NULL)) {
                fprintf(stderr, "%s: %s\n", argv[i], vips_error_buffer());
                return 1;
            }
            /* Pixels are made lazily: ask for them inside the timing. */
            size_t bytes = 0;
            void *pixels = vips_image_write_to_memory(thumb, &bytes);
            double spent = process_cpu_ms() - start;
            if (spent < best) best = spent;
            /* The thumbnail reads its source once: keep its pixels instead. */
            if (kept) g_object_unref(kept);
            kept = vips_image_new_from_memory_copy(pixels, bytes, vips_image_get_width(thumb),
                                                   vips_image_get_height(thumb), thumb->Bands, thumb->BandFmt);
            g_free(pixels);
            g_object_unref(thumb);
        }
        const char *name = strrchr(argv[i], '/');
        name = name ? name + 1 : argv[i];
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s-%d.png", out_dir, name, size);
        if (vips_pngsave(kept, path, NULL)) {
            fprintf(stderr, "%s: %s\n", path, vips_error_buffer());
            return 1;
        }
        printf("name=%s cpu_ms=%.3f width=%d height=%d\n", name, best, vips_image_get_width(kept),
               vips_image_get_height(kept));
        g_object_unref(kept);
        g_free(data);
    }
    vips_shutdown();
    return 0;
}
