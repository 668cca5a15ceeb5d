#define _GNU_SOURCE
#include "aiv_codecs.h"

#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

int aiv_map_hole(uint8_t *at, size_t size) {
    void *fresh = mmap(at, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (fresh == MAP_FAILED) return -1;
    if (fresh != (void *)at) {  /* a kernel before 4.17 takes the flag as a hint */
        munmap(fresh, size);
        return -1;
    }
    madvise(fresh, size, MADV_HUGEPAGE);
    return 0;
}

size_t aiv_move_pages(uint8_t *from, size_t size, uint8_t *to, size_t chunk, size_t *lost) {
    size_t moved = 0;
    *lost = 0;
    while (moved < size) {
        size_t count = size - moved < chunk ? size - moved : chunk;
        if (mremap(from + moved, count, count, MREMAP_MAYMOVE | MREMAP_FIXED, to + moved) == MAP_FAILED) {
            /* Some kernels unmap the destination before they fail. Map this
             * chunk again, but only if nothing is mapped there: another
             * thread may have been given the hole since (MAP_FIXED would
             * replace its memory). Whatever is there otherwise, our old
             * pages or another's, the chunk is lost to the caller. The rest
             * of the destination was never touched. */
            if (aiv_map_hole(to + moved, count) != 0) *lost = count;
            return moved;
        }
        moved += count;
    }
    return moved;
}

int aiv_trim_heap(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}
