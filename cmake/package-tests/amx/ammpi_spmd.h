/* ammpi_spmd.h - forwarding header: the AMMPI SPMD interface is viastack's am_spmd.h. */
#include <am_spmd.h>
