/* See include/cc_platform.h. */
#define _GNU_SOURCE
#include "cc_platform.h"

#include <dlfcn.h>
#include <stddef.h>

const char *cc_platform_image_path(const void *address) {
    Dl_info info;
    if (dladdr(address, &info) == 0) return NULL;
    return info.dli_fname;
}
