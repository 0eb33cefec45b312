/* amudp_spmd.h - forwarding header: the AMUDP SPMD interface is viastack's am_spmd.h. */
#include <am_spmd.h>
