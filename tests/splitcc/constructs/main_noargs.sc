/* "splitc_main()" with no parameters and no return type or statement. */
#include <split-c/split-c.h>
#include <stdio.h>

splitc_main()
{
    barrier();
    on_one printf("main_noargs: ok on %d processors\n", PROCS);
}
