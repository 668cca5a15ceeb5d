/* giflib's DGifSlurp (the decode benchmark's peer). */
#include <gif_lib.h>
