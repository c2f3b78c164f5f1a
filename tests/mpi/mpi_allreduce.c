/* SPDX-License-Identifier: MIT */
/*
 * mpi_allreduce.c - an MPI program as any user writes one: an
 * MPI_Allreduce sweep (sum of floats) from 64 B to 1 MiB, every result
 * checked on every rank. tests/interop/shim_mpi.sh builds it with mpicc
 * and runs it unmodified under `ibfab exec -- mpirun -np N`.
 *
 * Each size: 2 warm-up calls (the library connects its endpoints and
 * registers the buffers), a barrier, then ITERS timed calls; rank 0
 * prints "allreduce BYTES USEC" (MPI_Wtime, the simulated clock under the
 * shim). Rank r contributes r + 1 in every element, so every element of
 * the result is N (N + 1) / 2, exactly (small integers in floats). After
 * MPI_Finalize every rank prints "finalized RANK". Exit 1 on the first
 * wrong element.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 20

int main(int argc, char **argv)
{
	int r, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	for (size_t sz = 64; sz <= (1u << 20); sz *= 4) {
		size_t cnt = sz / sizeof(float);
		float *a = malloc(sz), *b = malloc(sz);
		const float want = (float)n * (float)(n + 1) / 2;

		if (!a || !b) {
			fprintf(stderr, "rank %d: out of memory\n", r);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		for (size_t i = 0; i < cnt; i++)
			a[i] = (float)(r + 1);
		for (int it = 0; it < 2; it++)
			MPI_Allreduce(a, b, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();

		for (int it = 0; it < ITERS; it++)
			MPI_Allreduce(a, b, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double t = (MPI_Wtime() - t0) / ITERS;

		for (size_t i = 0; i < cnt; i++)
			if (b[i] != want) {
				fprintf(stderr, "rank %d: %zu bytes: element %zu is %g, want %g\n", r,
					sz, i, (double)b[i], (double)want);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		if (!r)
			printf("allreduce %zu %.3f\n", sz, t * 1e6);
		free(a);
		free(b);
	}
	MPI_Finalize();
	printf("finalized %d\n", r);
	fflush(stdout);
	return 0;
}
