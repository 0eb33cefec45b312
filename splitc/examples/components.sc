/*
 * components.sc -- connected components (image labelling) in Split-C.
 *
 * A random black-and-white image of (v*q) x (w*r) pixels is cut into a v x w
 * grid of q x r tiles and held in the spread array
 *
 *	int X[v][w]::[q][r];
 *
 * so tile (a,b) is block a*w+b, on processor (a*w+b) mod PROCS.  Every set
 * pixel starts with its own label (1 + its row-major index in the image);
 * labels then flow to the smallest one of each 4-connected component:
 *
 *	repeat
 *	    each processor settles its tiles (local sweeps until nothing
 *	    changes, using the neighbours' edge pixels fetched last round)
 *	    stop when no label changed anywhere
 *	    fetch the edge rows and columns of the neighbouring tiles with
 *	    split-phase gets  l := X[a][b][i][j] , then sync()
 *
 * Every processor labels the whole image sequentially too and checks its
 * tiles against that.  The printed "result:" (a checksum of the final labels,
 * the number of components and the number of rounds) is the same for any
 * PROCS.
 *
 * Usage: components [-v V] [-w W] [-q Q] [-r R] [--density PERMILLE]
 *                   [--seed S] [--corrupt]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <split-c/split-c.h>
#include <split-c/control.h>

#define OWNER(a, b)	(((a) * w + (b)) % PROCS)

/* the smaller label of two; 0 (background) never wins */
#define MINLAB(m, x)	((x) != 0 && (x) < (m) ? (x) : (m))

/*
 * Give every set pixel of my tiles its starting label.
 */
void
init_labels(int v, int w, int q, int r, int X[v][w]::[q][r], char *image)
{
	int a, b, i, j;
	long y, x, W = (long) w * r;

	for (a = 0; a < v; a++)
		for (b = 0; b < w; b++) {
			int *t;

			if (OWNER(a, b) != MYPROC)
				continue;
			t = (int *) &X[a][b][0][0];	/* my tile, locally */
			for (i = 0; i < q; i++)
				for (j = 0; j < r; j++) {
					y = (long) a * q + i;
					x = (long) b * r + j;
					t[i * r + j] = image[y * W + x] ? (int) (y * W + x + 1) : 0;
				}
		}
}

/*
 * Fetch the pixels just outside each of my tiles: g[0..r-1] the row above,
 * g[r..2r-1] the row below, g[2r..2r+q-1] the column to the left,
 * g[2r+q..2r+2q-1] the column to the right (0 past the image's edge).
 */
void
fetch_ghosts(int v, int w, int q, int r, int X[v][w]::[q][r], int *ghost)
{
	int a, b, i, j, *g;

	g = ghost;
	for (a = 0; a < v; a++)
		for (b = 0; b < w; b++) {
			if (OWNER(a, b) != MYPROC)
				continue;
			for (j = 0; j < r; j++) {
				if (a > 0)
					g[j] := X[a - 1][b][q - 1][j];
				else
					g[j] = 0;
				if (a < v - 1)
					g[r + j] := X[a + 1][b][0][j];
				else
					g[r + j] = 0;
			}
			for (i = 0; i < q; i++) {
				if (b > 0)
					g[2 * r + i] := X[a][b - 1][i][r - 1];
				else
					g[2 * r + i] = 0;
				if (b < w - 1)
					g[2 * r + q + i] := X[a][b + 1][i][0];
				else
					g[2 * r + q + i] = 0;
			}
			g += 2 * (q + r);
		}
	sync();
}

/*
 * Lowers pixel (i, j) of tile t to its smallest labelled neighbour (ghost
 * pixels g beyond the tile's edges); returns 1 if its label changed.
 */
int
relax(q, r, t, g, i, j)
int q, r, i, j;
int *t, *g;
{
	int m, n;

	m = t[i * r + j];
	if (m == 0)
		return 0;
	n = m;
	n = MINLAB(n, i > 0 ? t[(i - 1) * r + j] : g[j]);
	n = MINLAB(n, i < q - 1 ? t[(i + 1) * r + j] : g[r + j]);
	n = MINLAB(n, j > 0 ? t[i * r + j - 1] : g[2 * r + i]);
	n = MINLAB(n, j < r - 1 ? t[i * r + j + 1] : g[2 * r + q + i]);
	if (n >= m)
		return 0;
	t[i * r + j] = n;
	return 1;
}

/*
 * Local sweeps over one tile t (q x r) with its ghost pixels g until no
 * label changes; returns how many labels changed.
 */
long
settle(q, r, t, g)
int q, r;
int *t, *g;
{
	long changed = 0;
	int i, j, again;

	do {
		again = 0;
		for (i = 0; i < q; i++)
			for (j = 0; j < r; j++)
				again |= relax(q, r, t, g, i, j) && ++changed;
		/* and back again, so labels also run up and to the left */
		for (i = q - 1; i >= 0; i--)
			for (j = r - 1; j >= 0; j--)
				again |= relax(q, r, t, g, i, j) && ++changed;
	} while (again);
	return changed;
}

/*
 * One round: settle all my tiles; returns the number of labels changed.
 * Each tile settled is counted in tally[0][MYPROC] on processor 0.
 */
long
settle_all(int v, int w, int q, int r, int X[v][w]::[q][r], int *ghost,
	   int tally[1]::[PROCS])
{
	int a, b, k = 0;
	long changed = 0;

	for (a = 0; a < v; a++)
		for (b = 0; b < w; b++) {
			if (OWNER(a, b) != MYPROC)
				continue;
			changed += settle(q, r, (int *) &X[a][b][0][0], ghost + k * 2 * (q + r));
			tally[0][MYPROC]++;
			k++;
		}
	return changed;
}

/*
 * Sequential reference: label the H x W image in lab[] by depth-first search
 * from each unlabelled set pixel in row-major order, so every component gets
 * 1 + the index of its first pixel, which is the smallest.
 */
void
reference(H, W, image, lab)
long H, W;
char *image;
int *lab;
{
	long *stack, top, p, s, y, x;
	int label;

	stack = (long *) malloc(H * W * sizeof(long));
	for (p = 0; p < H * W; p++)
		lab[p] = 0;
	for (s = 0; s < H * W; s++) {
		if (!image[s] || lab[s])
			continue;
		label = (int) (s + 1);
		lab[s] = label;
		top = 0;
		stack[top++] = s;
		while (top > 0) {
			p = stack[--top];
			y = p / W;
			x = p % W;
			if (y > 0 && image[p - W] && !lab[p - W])
				lab[p - W] = label, stack[top++] = p - W;
			if (y < H - 1 && image[p + W] && !lab[p + W])
				lab[p + W] = label, stack[top++] = p + W;
			if (x > 0 && image[p - 1] && !lab[p - 1])
				lab[p - 1] = label, stack[top++] = p - 1;
			if (x < W - 1 && image[p + 1] && !lab[p + 1])
				lab[p + 1] = label, stack[top++] = p + 1;
		}
	}
	free(stack);
}

/*
 * Compare my tiles with the reference; returns the number of wrong pixels.
 * Also sums a checksum and counts the component roots (label == own index+1).
 */
long
check(int v, int w, int q, int r, int X[v][w]::[q][r], int *lab,
      unsigned long *sum, long *roots)
{
	int a, b, i, j, *t;
	long y, x, p, bad = 0, W = (long) w * r;

	for (a = 0; a < v; a++)
		for (b = 0; b < w; b++) {
			if (OWNER(a, b) != MYPROC)
				continue;
			t = (int *) &X[a][b][0][0];
			for (i = 0; i < q; i++)
				for (j = 0; j < r; j++) {
					y = (long) a * q + i;
					x = (long) b * r + j;
					p = y * W + x;
					if (t[i * r + j] != lab[p]) {
						if (bad < 5)
							fprintf(stderr, "components: pixel (%ld,%ld) has label %d, "
								"sequential %d\n", y, x, t[i * r + j], lab[p]);
						bad++;
					}
					*sum += (unsigned long) (p + 1) * (unsigned long) t[i * r + j];
					if (t[i * r + j] == p + 1)
						++*roots;
				}
		}
	return bad;
}

int
splitc_main(int argc, char **argv)
{
	int v = 4, w = 4, q = 8, r = 8;
	int density = 580, seed = 1991, corrupt = 0;
	int i, k, mytiles, rounds;
	long H, W, p, changed, bad, roots, tiles;
	unsigned long sum;
	char *image;
	int *ghost, *lab;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v") && i + 1 < argc)
			v = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-w") && i + 1 < argc)
			w = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-q") && i + 1 < argc)
			q = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			r = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--density") && i + 1 < argc)
			density = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--corrupt"))
			corrupt = 1;
		else {
			on_one {
				fprintf(stderr, "usage: components [-v V] [-w W] [-q Q] [-r R] \
[--density PERMILLE] [--seed S] [--corrupt]\n");
			}
			return 2;
		}
	}
	if (v < 1 || w < 1 || q < 1 || r < 1 || density < 0 || density > 1000) {
		on_one {
			fprintf(stderr, "components: bad parameters\n");
		}
		return 2;
	}
	H = (long) v * q;
	W = (long) w * r;

	/* the same image on every processor */
	image = (char *) malloc(H * W);
	srandom(seed);
	for (p = 0; p < H * W; p++)
		image[p] = random() % 1000 < density;

	mytiles = 0;
	for (k = 0; k < v * w; k++)
		if (k % PROCS == MYPROC)
			mytiles++;
	ghost = (int *) malloc((mytiles ? mytiles : 1) * 2 * (q + r) * sizeof(int));

	{
		int X[v][w]::[q][r];		/* the image's labels, tile by tile */
		int tally[1]::[PROCS];		/* all on processor 0 */

		on_one {
			for (i = 0; i < PROCS; i++)
				tally[0][i] = 0;
		}
		init_labels(v, w, q, r, X, image);
		barrier();
		fetch_ghosts(v, w, q, r, X, ghost);
		barrier();
		rounds = 0;
		for (;;) {
			changed = settle_all(v, w, q, r, X, ghost, tally);
			rounds++;
			if (all_reduce_to_all_add_l(changed) == 0)
				break;
			/* the reduction is a barrier too: all tiles are settled */
			fetch_ghosts(v, w, q, r, X, ghost);
			barrier();		/* nobody changes a tile still being read */
		}
		if (corrupt && MYPROC == PROCS - 1 && mytiles > 0) {
			k = MYPROC;		/* my first tile */
			X[k / w][k % w][q / 2][r / 2] ^= 1;
		}

		lab = (int *) malloc(H * W * sizeof(int));
		reference(H, W, image, lab);
		sum = 0;
		roots = 0;
		bad = check(v, w, q, r, X, lab, &sum, &roots);
		bad = all_reduce_to_all_add_l(bad);
		sum = all_reduce_to_all_add_ul(sum);
		roots = all_reduce_to_all_add_l(roots);
		barrier();
		tiles = 0;
		on_one {
			for (i = 0; i < PROCS; i++)
				tiles += tally[0][i];
			if (tiles != (long) v * w * rounds) {
				fprintf(stderr, "components: %ld tile settlings counted, expected %ld\n",
					tiles, (long) v * w * rounds);
				bad++;
			}
			printf("components: PROCS=%d image %ldx%ld in %dx%d tiles of %dx%d, "
			       "%ld components, %d rounds  check %s\n",
			       PROCS, H, W, v, w, q, r, roots, rounds, bad ? "FAILED" : "OK");
			printf("result: %016lx %ld %d\n", sum, roots, rounds);
			fflush(stdout);
		}
		bad = all_reduce_to_all_max_l(bad);
	}
	free(lab);
	free(ghost);
	free(image);
	return bad ? 1 : 0;
}
