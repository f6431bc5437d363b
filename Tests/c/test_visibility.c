/* The header under hidden visibility: a program built with -fvisibility=hidden that includes
 * contentcards.h inside "#pragma GCC visibility push(hidden)" still links and calls the
 * library, because every declaration carries CC_API (default visibility). Without it, this
 * file does not link ("hidden symbol ... is referenced by DSO"). */
#pragma GCC visibility push(hidden)
#include "contentcards.h"
#pragma GCC visibility pop

#include <stdio.h>
#include <string.h>

int main(void) {
    int ok = strcmp(cc_version(), CC_VERSION_STRING) == 0 && cc_abi_version() == CC_ABI_VERSION;
    printf("%d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}
