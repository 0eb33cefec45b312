/* amudp.h - forwarding header: a program written for AMUDP builds against viastack's AM. */
#include <am.h>
