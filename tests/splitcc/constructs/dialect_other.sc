/* The second file of the dialect test: includes the same globals. */
#include <split-c/split-c.h>
#include "dialect_common.h"

other_file(int me)
{
    shared_table[0] = me;
    return 3 * me;
}
