/* A syntax error: the message names what was expected and where. */
#include <split-c/split-c.h>

splitc_main(int argc, char **argv)
{
    int x = 1
    x := *(int *global)toglobal(0, &x);   /* expect-error: expected ';' after the declaration */
}
