/* A header that defines (not just declares) globals, included by both files
 * of the program: 1990s C relied on common symbols for this. */
int shared_count;
double shared_table[8];
extern inline int twice(int x) { return 2 * x; }
