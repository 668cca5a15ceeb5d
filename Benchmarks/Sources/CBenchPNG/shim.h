/* libpng's own one-call decoder (the decode benchmark's peer) and its version. */
#include <png.h>
