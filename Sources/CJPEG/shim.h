/* jpeglib.h needs FILE and size_t declared before it. */
#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>
