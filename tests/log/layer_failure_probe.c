/* layer_failure_probe.c - a call of FM and one of BIP before their
 * initialization, for the tests of the layers' failure explanations
 * (tests/log/CMakeLists.txt; docs/fm.md and docs/bip.md, VIASTACK_FM_VERBOSE /
 * VIASTACK_BIP_VERBOSE): both return their NOT_INIT code, and with the
 * layer's VERBOSE variable set the logging facility says which call failed
 * and why.  Prints "layer_failure_probe: done" and exits 0. */
#include <stdio.h>

#include "bip.h"
#include "fm.h"

int main(void) {
    if (FM_extract(0) != FM_ERR_NOT_INIT) {
        printf("layer_failure_probe: FM_extract before FM_initialize did not return FM_ERR_NOT_INIT\n");
        return 1;
    }
    int source = 0;
    size_t len = 0;
    if (bip_rtest(&source, &len) != BIP_ERR_NOT_INIT) {
        printf("layer_failure_probe: bip_rtest before bip_init did not return BIP_ERR_NOT_INIT\n");
        return 1;
    }
    printf("layer_failure_probe: done\n");
    return 0;
}
