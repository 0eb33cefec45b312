/* dlopen_vipl.c - loads libvipl at run time (package_layout): its providers
 * register when the library is loaded, so VipOpenNic finds the default one. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    void *h = dlopen(argc > 1 ? argv[1] : "libvipl.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    /* VIP_RETURN VipOpenNic(const char *, VIP_NIC_HANDLE *), VipCloseNic(VIP_NIC_HANDLE) */
    int (*open_nic)(const char *, void **) = (int (*)(const char *, void **))dlsym(h, "VipOpenNic");
    int (*close_nic)(void *) = (int (*)(void *))dlsym(h, "VipCloseNic");
    if (!open_nic || !close_nic) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    void *nic = NULL;
    int rc = open_nic(NULL, &nic);
    if (rc != 0) {
        fprintf(stderr, "VipOpenNic through dlopen returned %d\n", rc);
        return 1;
    }
    printf("dlopen + VipOpenNic: ok\n");
    close_nic(nic);
    dlclose(h);
    return 0;
}
