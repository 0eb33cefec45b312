/* gptr_list.sc - global pointers to structures, as in the Split-C manual's
 * discussion of global pointers: a ring of nodes spread over the processors,
 * linked by `struct node *global' fields; processor 0 walks it reading
 * fields through the pointer (p->val, p->next), updates remote fields
 * (p->val += ..., p->hits++), copies whole nodes (n = *p, *p = n), reads with
 * split-phase :=, moves arrays of nodes with bulk_put/bulk_get, and checks
 * global pointer arithmetic (toproc, tolocal, toglobal) and spread pointer
 * arithmetic (next processor first).  Exits non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <split-c/split-c.h>

#define K 5                     /* nodes per processor */

typedef struct node *global nodeptr;
struct node {
    int owner;
    int val;
    double weight;
    int hits;
    nodeptr next;
};

struct node nodes[K];
struct node copies[K];
double cells[PROCS]::;          /* one double per processor */
static int errors;

#define EXPECT(c) do { if (!(c)) { fprintf(stderr, "processor %d: line %d: %s\n", MYPROC, __LINE__, #c); \
                                   errors++; } } while (0)

splitc_main(int argc, char **argv)
{
    int i, steps;
    nodeptr p, head;
    struct node n;
    double *spread sp;

    /* node i of processor q links to node i of q+1; the last processor's
     * node i to node i+1 of processor 0: one ring through all K*PROCS nodes */
    for (i = 0; i < K; i++) {
        nodes[i].owner = MYPROC;
        nodes[i].val = MYPROC * K + i;
        nodes[i].weight = 0.5 * i;
        nodes[i].hits = 0;
        if (MYPROC < PROCS - 1)
            nodes[i].next = toglobal(MYPROC + 1, &nodes[i]);
        else
            nodes[i].next = toglobal(0, &nodes[(i + 1) % K]);
    }
    cells[MYPROC] = 100.0 + MYPROC;
    barrier();

    on_one {
        long sum = 0;
        head = toglobal(0, &nodes[0]);
        EXPECT(is_local(head) && tolocal(head) == (void *)&nodes[0]);
        /* arithmetic on a global pointer keeps its processor */
        p = (nodeptr)toglobal(PROCS - 1, &nodes[0]) + 2;
        EXPECT(toproc(p) == PROCS - 1 && tolocal(p) == (void *)&nodes[2]);
        EXPECT(p->val == (PROCS - 1) * K + 2 && (p - 2)->val == (PROCS - 1) * K);
        EXPECT(p - (nodeptr)toglobal(PROCS - 1, &nodes[0]) == 2);

        p = head;
        steps = 0;
        do {
            sum += p->val;
            p->hits++;
            p->val += 1000;
            p = p->next;
            steps++;
        } while (p != head && steps <= K * PROCS);
        EXPECT(steps == K * PROCS);
        EXPECT(sum == (long)K * PROCS * (K * PROCS - 1) / 2);

        /* struct copies through the pointer, both ways */
        p = head->next;
        n = *p;
        EXPECT(n.owner == (PROCS > 1 ? 1 : 0) && n.hits == 1 && n.val >= 1000);
        n.weight = -1.25;
        *p = n;
        EXPECT(p->weight == -1.25);

        /* split-phase reads of fields */
        {
            int v;
            double w;
            nodeptr nx;
            v := p->val;
            w := p->weight;
            nx := p->next;
            sync();
            EXPECT(v == n.val && w == -1.25 && nx == n.next);
        }

        /* spread pointer arithmetic: + 1 is the next processor */
        sp = &cells[0];
        for (i = 0; i < PROCS; i++) {
            EXPECT(toproc((double *global)sp) == i && *sp == 100.0 + i);
            sp = sp + 1;
        }
    }
    barrier();

    /* every processor: ship my nodes to the right neighbour's copies[] and
     * read them back from the left neighbour with bulk_get */
    {
        int right = (MYPROC + 1) % PROCS, left = (MYPROC + PROCS - 1) % PROCS;
        struct node back[K];
        bulk_put(toglobal(right, copies), nodes, sizeof(nodes));
        sync();
        barrier();
        for (i = 0; i < K; i++)
            EXPECT(copies[i].owner == left && copies[i].hits == 1 && copies[i].val == left * K + i + 1000);
        bulk_get(back, toglobal(right, copies), sizeof(back));
        sync();
        for (i = 0; i < K; i++)
            EXPECT(back[i].owner == MYPROC && back[i].val == nodes[i].val);
    }
    for (i = 0; i < K; i++)
        EXPECT(nodes[i].hits == 1 && nodes[i].val == MYPROC * K + i + 1000);

    errors = all_reduce_to_all_add(errors);
    on_one printf("gptr_list: ring of %d nodes, %d errors\n", K * PROCS, errors);
    barrier();
    if (errors)
        exit(1);
}
