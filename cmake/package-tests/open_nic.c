/* open_nic.c - links with `cc open_nic.c -lvipl` alone (package_layout): the
 * providers registered themselves, so the default NIC opens. */
#include <stdio.h>

#include <vipl.h>

int main(void) {
    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    VIP_RETURN rc = VipOpenNic(NULL, &nic);
    if (rc != VIP_SUCCESS) {
        fprintf(stderr, "VipOpenNic: %s\n", VipxReturnString(rc));
        return 1;
    }
    if (VipQueryNic(nic, &attr) != VIP_SUCCESS) return 1;
    printf("opened %s\n", attr.Name);
    return VipCloseNic(nic) == VIP_SUCCESS ? 0 : 1;
}
