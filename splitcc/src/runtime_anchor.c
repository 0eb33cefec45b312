/* runtime_anchor.c - the shared library translated Split-C programs link
 * (libsplitc_runtime.so) is the Split-C runtime, VIPL and its providers
 * linked whole; this file only gives the library a source of its own. */
const char splitc_runtime_library[] = "viastack Split-C runtime";
