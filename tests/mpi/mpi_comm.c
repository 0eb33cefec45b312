/* mpi_comm - communicators: MPI_Comm_dup (same group, separate matching
 * context), MPI_Comm_split (colors, reversed keys, MPI_UNDEFINED), groups and
 * MPI_Comm_create, an intercommunicator and its merge, and many dup/free
 * cycles.  Any rank count >= 2. */
#include "mpi_check.h"

static int rank, size;

/* A message sent on a duplicate is never received on the original: rank 0
 * sends on `dup` first, then on WORLD with the same tag; rank 1 receives on
 * WORLD first and must get the WORLD message. */
static void test_dup(void) {
    MPI_Comm dup;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int r, s, cmp;
    MPI_OK(MPI_Comm_rank(dup, &r));
    MPI_OK(MPI_Comm_size(dup, &s));
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp));
    CHECK(r == rank && s == size && cmp == MPI_CONGRUENT,
          "dup: rank %d size %d compare %d, expected %d %d MPI_CONGRUENT", r, s, cmp, rank, size);
    if (rank == 0) {
        int a = 111, b = 222;
        MPI_OK(MPI_Send(&a, 1, MPI_INT, 1, 9, dup));
        MPI_OK(MPI_Send(&b, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int got;
        MPI_OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(got == 222, "dup: WORLD receive got %d, expected 222 (the message sent on the dup leaked)", got);
        MPI_OK(MPI_Recv(&got, 1, MPI_INT, 0, 9, dup, MPI_STATUS_IGNORE));
        CHECK(got == 111, "dup: dup receive got %d, expected 111", got);
    }
    /* A collective on the dup while one on WORLD is in flight elsewhere. */
    int v = rank, sum;
    MPI_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK(sum == size * (size - 1) / 2, "dup: allreduce %d", sum);
    MPI_OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "dup: MPI_Comm_free did not set MPI_COMM_NULL");
}

/* Split by parity with keys reversing the order inside each half; ranks that
 * are multiples of 3 (other than 0) stay out of a second split. */
static void test_split(void) {
    MPI_Comm half;
    int color = rank % 2;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, color, -rank, &half));
    int hr, hs;
    MPI_OK(MPI_Comm_rank(half, &hr));
    MPI_OK(MPI_Comm_size(half, &hs));
    int want_size = (size + 1 - color) / 2;
    CHECK(hs == want_size, "split: half size %d, expected %d", hs, want_size);
    CHECK(hr == want_size - 1 - rank / 2, "split: rank %d in half %d, expected %d (keys reversed)", hr, color,
          want_size - 1 - rank / 2);
    /* Sum of world ranks in the half, and a ring shift inside it. */
    int sum, want = 0;
    MPI_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
    for (int r = color; r < size; r += 2) want += r;
    CHECK(sum == want, "split: allreduce in half %d gave %d, expected %d", color, sum, want);
    int got = -1;
    MPI_OK(MPI_Sendrecv(&rank, 1, MPI_INT, (hr + 1) % hs, 0, &got, 1, MPI_INT, (hr + hs - 1) % hs, 0, half,
                        MPI_STATUS_IGNORE));
    /* Left neighbour in the half holds half-rank hr-1 = world rank 2 higher. */
    int left_world = color + 2 * (want_size - 1 - (hr + hs - 1) % hs);
    CHECK(got == left_world, "split: ring in half got world rank %d, expected %d", got, left_world);
    MPI_OK(MPI_Comm_free(&half));

    MPI_Comm some;
    int out = rank != 0 && rank % 3 == 0;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, out ? MPI_UNDEFINED : 0, rank, &some));
    if (out) {
        CHECK(some == MPI_COMM_NULL, "split: MPI_UNDEFINED color did not give MPI_COMM_NULL");
    } else {
        int n;
        MPI_OK(MPI_Comm_size(some, &n));
        CHECK(n == size - (size - 1) / 3, "split: %d ranks stayed, expected %d", n, size - (size - 1) / 3);
        MPI_OK(MPI_Comm_free(&some));
    }
}

/* The odd ranks as a group, a communicator made from it, rank translation. */
static void test_groups(void) {
    MPI_Group world, odd;
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int n = size / 2, *ranks = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) ranks[i] = 2 * i + 1;
    MPI_OK(MPI_Group_incl(world, n, ranks, &odd));
    int gs, gr;
    MPI_OK(MPI_Group_size(odd, &gs));
    MPI_OK(MPI_Group_rank(odd, &gr));
    CHECK(gs == n, "group: size %d, expected %d", gs, n);
    CHECK(gr == (rank % 2 ? rank / 2 : MPI_UNDEFINED), "group: rank %d", gr);
    int *back = malloc(sizeof(int) * (size_t)n), *seq = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) seq[i] = i;
    MPI_OK(MPI_Group_translate_ranks(odd, n, seq, world, back));
    for (int i = 0; i < n; i++)
        CHECK(back[i] == ranks[i], "group: translate %d -> %d, expected %d", i, back[i], ranks[i]);
    MPI_Comm oc;
    MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, odd, &oc));
    if (rank % 2) {
        int r, sum;
        MPI_OK(MPI_Comm_rank(oc, &r));
        CHECK(r == rank / 2, "comm_create: rank %d, expected %d", r, rank / 2);
        MPI_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, oc));
        CHECK(sum == n * n, "comm_create: sum of odd ranks %d, expected %d", sum, n * n);
        MPI_OK(MPI_Comm_free(&oc));
    } else {
        CHECK(oc == MPI_COMM_NULL, "comm_create: a rank outside the group got a communicator");
    }
    MPI_OK(MPI_Group_free(&odd));
    MPI_OK(MPI_Group_free(&world));
    free(ranks);
    free(back);
    free(seq);
}

/* Evens and odds joined by an intercommunicator: each even rank i talks to
 * odd rank i of the remote group; the merge puts the evens first. */
static void test_intercomm(void) {
    if (size < 2 || size % 2) return;
    MPI_Comm half, inter, merged;
    int color = rank % 2;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
    /* Local leader 0 of each half; remote leader is world rank 1 or 0. */
    MPI_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? 0 : 1, 77, &inter));
    int rs, flag;
    MPI_OK(MPI_Comm_remote_size(inter, &rs));
    MPI_OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag && rs == size / 2, "intercomm: inter %d remote size %d", flag, rs);
    int me = rank / 2, got = -1;
    MPI_OK(MPI_Sendrecv(&rank, 1, MPI_INT, me, 3, &got, 1, MPI_INT, me, 3, inter, MPI_STATUS_IGNORE));
    CHECK(got == (rank ^ 1), "intercomm: partner said %d, expected %d", got, rank ^ 1);
    MPI_OK(MPI_Intercomm_merge(inter, color, &merged));
    int mr;
    MPI_OK(MPI_Comm_rank(merged, &mr));
    CHECK(mr == color * (size / 2) + rank / 2, "intercomm merge: rank %d, expected %d", mr,
          color * (size / 2) + rank / 2);
    MPI_OK(MPI_Comm_free(&merged));
    MPI_OK(MPI_Comm_free(&inter));
    MPI_OK(MPI_Comm_free(&half));
}

/* 300 dup/free cycles, each used once: context ids are recycled correctly. */
static void test_many_dups(void) {
    for (int i = 0; i < 300; i++) {
        MPI_Comm c;
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        int v = i + rank, out;
        MPI_OK(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, c));
        CHECK(out == i + size - 1, "dup cycle %d: max %d", i, out);
        MPI_OK(MPI_Comm_free(&c));
    }
}

int main(int argc, char **argv) {
    check_init(&argc, &argv, &rank, &size);
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    test_dup();
    test_split();
    test_groups();
    test_intercomm();
    test_many_dups();
    check_done("mpi_comm", rank, size);
    return 0;
}
