/* ammpi.h - forwarding header: a program written for AMMPI builds against viastack's AM. */
#include <am.h>
