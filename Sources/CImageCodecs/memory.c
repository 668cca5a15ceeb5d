#define _GNU_SOURCE
#include "aiv_codecs.h"

#include <sys/mman.h>

size_t aiv_move_pages(uint8_t *from, size_t size, uint8_t *to, size_t chunk) {
    size_t moved = 0;
    while (moved < size) {
        size_t count = size - moved < chunk ? size - moved : chunk;
        if (mremap(from + moved, count, count, MREMAP_MAYMOVE | MREMAP_FIXED, to + moved) == MAP_FAILED) {
            /* The kernel unmaps the destination before it checks the
             * source: put fresh memory back under the rest. */
            size_t rest = size - moved;
            void *fresh = mmap(to + moved, rest, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            if (fresh == MAP_FAILED) return (size_t)-1;
            madvise(fresh, rest, MADV_HUGEPAGE);
            return moved;
        }
        moved += count;
    }
    return moved;
}
