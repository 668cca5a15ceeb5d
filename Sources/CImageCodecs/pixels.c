#define _GNU_SOURCE
#include "aiv_codecs.h"

#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>

/* Buffers at least this big are mapped directly, aligned to 2 MiB and marked
 * MADV_HUGEPAGE: a 91 MB RGBA buffer then takes ~45 page faults instead of
 * ~22,000 (glibc would mmap it anyway, with 4 KiB pages). */
#define AIV_HUGE (2u * 1024u * 1024u)

static size_t aiv_round_up(size_t size) {
    return (size + AIV_HUGE - 1) & ~((size_t)AIV_HUGE - 1);
}

uint8_t *aiv_pixels_alloc(size_t size) {
    if (size == 0) size = 1;
    if (size < AIV_HUGE) return (uint8_t *)malloc(size);
    size_t rounded = aiv_round_up(size);
    if (rounded < size) return NULL; /* overflow */
    size_t mapped = rounded + AIV_HUGE;
    uint8_t *raw = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uintptr_t start = ((uintptr_t)raw + AIV_HUGE - 1) & ~((uintptr_t)AIV_HUGE - 1);
    size_t head = start - (uintptr_t)raw;
    size_t tail = mapped - head - rounded;
    if (head) munmap(raw, head);
    if (tail) munmap((uint8_t *)start + rounded, tail);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, rounded, MADV_HUGEPAGE);
#endif
    return (uint8_t *)start;
}

void aiv_pixels_free(void *pixels, size_t size) {
    if (!pixels) return;
    if (size == 0) size = 1;
    if (size < AIV_HUGE) {
        free(pixels);
    } else {
        munmap(pixels, aiv_round_up(size));
    }
}
