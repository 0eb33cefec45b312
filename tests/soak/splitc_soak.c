/* splitc_soak.c - the Split-C half of the soak (issue #16): every processor
 * stores (splitc_store_8), and sometimes puts or gets, to and from every
 * other processor in a shuffled order, for several rounds, through the C ABI
 * (splitc_rt.h).
 *
 *   vipl-run -n N splitc_soak OPERATIONS [ROUNDS]
 *
 * OPERATIONS is the job's total, spread evenly over the N(N-1) ordered pairs
 * and the rounds (rounded up).  Operation j of a pair in a round is a put when
 * j % 16 == 5, a get when j % 16 == 11, a store otherwise.  Each store or put
 * writes a value unique to (round, source, target, j), never 0, into its own
 * slot of the target's inbox (zeroed before the round).  After the round
 * (splitc_sync, splitc_store_sync of exactly the bytes expected here, then
 * splitc_all_store_sync) every slot is checked, the checksums of what was sent
 * and what arrived are compared job-wide, and no store byte may be left over:
 * a lost store leaves a 0, a misdirected one a wrong value, a duplicate an
 * extra store byte (or an all_store_sync that never balances, caught by the
 * launcher's timeout).  Gets read a peer's table of known values.
 *
 * Each processor prints, after splitc_finalize, one line the driver parses:
 *   soak-rank splitc R: fds_before=A fds_after=B shm_maps_during=M shm_maps_after=0 rss_half_kb=X rss_last_kb=Y anon_half_kb=P anon_last_kb=Q shmem_last_kb=S hwm_kb=Z errors=E
 * and processor 0 a summary line "splitc_soak: ...".
 *
 * SOAK_BREAK=value makes processor 0 send one wrong value in the first round,
 * to show that the checks fail. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak_probe.h"
#include "splitc_rt.h"

static long errors;
static int me, np;

static void fail(const char *what, int peer, long j, unsigned long long got, unsigned long long want) {
    if (errors < 20)
        fprintf(stderr, "splitc_soak proc %d: %s (peer %d, slot %ld: got %#llx, expected %#llx)\n", me, what, peer, j,
                got, want);
    errors++;
}

/* The value operation j from src to dst carries in round r (never 0). */
static uint64_t value_of(long r, int src, int dst, long j) {
    uint64_t x = ((uint64_t)r << 48) ^ ((uint64_t)src << 36) ^ ((uint64_t)dst << 24) ^ (uint64_t)j;
    x = (x ^ (x >> 31)) * 0x7fb5d329728ea185ull;
    x = (x ^ (x >> 27)) * 0x81dadef4bc2dd44dull;
    return (x ^ (x >> 33)) | 1u;
}
/* The value at slot j of processor owner's get table. */
static uint64_t table_of(int owner, long j) { return value_of(0xffff, owner, owner, j); }

enum { OP_STORE, OP_PUT, OP_GET };
static int op_of(long j) { return j % 16 == 5 ? OP_PUT : j % 16 == 11 ? OP_GET : OP_STORE; }

int main(int argc, char **argv) {
    int fds_before = soak_fd_count(), fds_after, k, shm_maps_during = -1;
    long total, rounds, per_pair, r, i, n_ops, j;
    long rss_half = -1, rss_last = -1, anon_half = -1, anon_last = -1, shmem_last = -1, stores = 0, puts = 0, gets = 0,
         store_in = 0;
    unsigned long sent_sum = 0, recv_sum = 0;
    double t0, t1;
    int *order, breaking;
    uint64_t *got;
    splitc_sptr_t inbox_s, table_s;
    uint64_t *inbox, *table;

    if (splitc_init(&argc, &argv) != 0) return 1;
    me = splitc_myproc();
    np = splitc_procs();
    breaking = me == 0 && getenv("SOAK_BREAK") && strcmp(getenv("SOAK_BREAK"), "value") == 0;
    total = argc > 1 ? atol(argv[1]) : 10000;
    rounds = argc > 2 ? atol(argv[2]) : 4;
    if (total < 1 || rounds < 1 || np < 2) {
        if (me == 0) fprintf(stderr, "usage: vipl-run -n N (N >= 2) splitc_soak OPERATIONS [ROUNDS]\n");
        splitc_finalize();
        return 2;
    }
    per_pair = (total + (long)np * (np - 1) * rounds - 1) / ((long)np * (np - 1) * rounds);
    /* inbox: slot src * per_pair + j on every processor; table: per_pair known values. */
    inbox_s = splitc_all_spread_malloc((size_t)np, (size_t)np * (size_t)per_pair * sizeof(uint64_t));
    table_s = splitc_all_spread_malloc((size_t)np, (size_t)per_pair * sizeof(uint64_t));
    inbox = (uint64_t *)splitc_sptr_addr(inbox_s);
    table = (uint64_t *)splitc_sptr_addr(table_s);
    n_ops = per_pair * (np - 1);
    order = malloc((size_t)n_ops * sizeof *order);
    got = malloc((size_t)np * (size_t)per_pair * sizeof *got);
    if (!inbox || !table || !order || !got) {
        fprintf(stderr, "splitc_soak proc %d: out of memory\n", me);
        return 1;
    }
    for (j = 0; j < per_pair; j++) table[j] = table_of(me, j);
    for (j = 0; j < per_pair; j++) store_in += op_of(j) == OP_STORE;
    store_in *= (long)(np - 1) * (long)sizeof(uint64_t); /* store bytes arriving here per round */
    splitc_barrier();

    t0 = splitc_get_seconds();
    for (r = 0; r < rounds; r++) {
        memset(inbox, 0, (size_t)np * (size_t)per_pair * sizeof *inbox);
        memset(got, 0, (size_t)np * (size_t)per_pair * sizeof *got);
        for (i = 0, k = 1; k < np; k++)
            for (j = 0; j < per_pair; j++) order[i++] = ((me + k) % np) * (int)per_pair + (int)j;
        soak_shuffle(order, n_ops, (unsigned long long)(me * 104729 + r + 1));
        splitc_barrier(); /* every inbox is zero before the first store of the round */
        for (i = 0; i < n_ops; i++) {
            int to = order[i] / (int)per_pair;
            long s = order[i] % (int)per_pair;
            uint64_t v = value_of(r, me, to, s);
            if (breaking && r == 0 && i == 0) v ^= 1u << 8; /* SOAK_BREAK=value */
            splitc_gptr_t slot = splitc_toglobal(to, &inbox[(long)me * per_pair + s]);
            switch (op_of(s)) {
            case OP_STORE:
                splitc_store_8(slot, v);
                sent_sum += v;
                stores++;
                break;
            case OP_PUT:
                splitc_put_8(slot, v);
                sent_sum += v;
                puts++;
                break;
            default: splitc_get_8(&got[(long)to * per_pair + s], splitc_toglobal(to, &table[s])); gets++;
            }
        }
        splitc_sync();
        splitc_store_sync((size_t)store_in);
        splitc_all_store_sync();
        if (splitc_store_bytes_arrived() != 0)
            fail("store bytes beyond those sent here (duplicates?)", -1, -1,
                 (unsigned long long)splitc_store_bytes_arrived(), 0);
        for (k = 0; k < np; k++) {
            if (k == me) continue;
            for (j = 0; j < per_pair; j++) {
                uint64_t want = op_of(j) == OP_GET ? 0 : value_of(r, k, me, j);
                uint64_t have = inbox[(long)k * per_pair + j];
                if (have != want) fail(have ? "wrong value in slot" : "store or put lost", k, j, have, want);
                recv_sum += have;
                if (op_of(j) == OP_GET && got[(long)k * per_pair + j] != table_of(k, j))
                    fail("get returned a wrong value", k, j, got[(long)k * per_pair + j], table_of(k, j));
            }
        }
        if (r == (rounds - 1) / 2) { /* the middle round: the driver compares the last with it */
            rss_half = soak_rss_kb();
            anon_half = soak_status_kb("RssAnon");
            shm_maps_during = soak_shm_mappings();
        }
    }
    t1 = splitc_get_seconds();
    rss_last = soak_rss_kb();
    anon_last = soak_status_kb("RssAnon");
    shmem_last = soak_status_kb("RssShmem");
    {
        /* Checksums job-wide: the sum of every value sent equals that of every value found. */
        unsigned long all_sent = splitc_all_reduce_to_all_add_ul(sent_sum);
        unsigned long all_recv = splitc_all_reduce_to_all_add_ul(recv_sum);
        long all_stores = splitc_all_reduce_to_all_add_l(stores);
        long all_puts = splitc_all_reduce_to_all_add_l(puts);
        long all_gets = splitc_all_reduce_to_all_add_l(gets);
        double slowest = splitc_all_reduce_to_all_dmax(t1 - t0);
        long all_errors;
        if (all_sent != all_recv) fail("job checksum of values sent and found differs", -1, -1, all_recv, all_sent);
        all_errors = splitc_all_reduce_to_all_add_l(errors);
        if (me == 0)
            printf("splitc_soak: %d processes, %ld rounds, %ld stores, %ld puts, %ld gets, %ld operations, "
                   "%.2f s, checksum %#lx, %ld errors, shm_files=%d job=%s\n",
                   np, rounds, all_stores, all_puts, all_gets, all_stores + all_puts + all_gets, slowest, all_sent,
                   all_errors, soak_job_shm_files(), getenv("VIASTACK_JOB") ? getenv("VIASTACK_JOB") : "-");
    }
    free(order);
    free(got);
    splitc_all_spread_free(table_s);
    splitc_all_spread_free(inbox_s);
    splitc_finalize();
    fds_after = soak_fd_count();
    printf("soak-rank splitc %d: fds_before=%d fds_after=%d shm_maps_during=%d shm_maps_after=%d rss_half_kb=%ld "
           "rss_last_kb=%ld anon_half_kb=%ld anon_last_kb=%ld shmem_last_kb=%ld hwm_kb=%ld errors=%ld\n",
           me, fds_before, fds_after, shm_maps_during, soak_shm_mappings(), rss_half, rss_last, anon_half, anon_last,
           shmem_last, soak_hwm_kb(), errors);
    if (fds_after != fds_before) {
        fprintf(stderr, "splitc_soak proc %d: %d file descriptors open after splitc_finalize, %d before splitc_init\n",
                me, fds_after, fds_before);
        return 3;
    }
    return errors ? 1 : 0;
}
