/* SPDX-License-Identifier: MIT */
/*
 * sim_par_mpi.h - the partitioned engine (sim_par.h) over MPI processes:
 * one partition a process, started as `mpirun -np N PROGRAM`.
 *
 * Every process builds the same model (set-up is deterministic) and keeps
 * the events of its own partition only; the windows are those of the
 * threads' back-end, with the earliest event and stop of all partitions
 * taken by an MPI_Allreduce and the messages between partitions (events,
 * and the copies some carry) exchanged by MPI_Alltoallv at each window's
 * end. The same model cut the same way gives the same events in the same
 * order on threads or on processes. After the run every process holds the
 * run's clock and event count; each holds its own components' state.
 */
#ifndef IBFAB_SIM_PAR_MPI_H
#define IBFAB_SIM_PAR_MPI_H

#include <mpi.h>

#include "sim/sim_par.h"

/* As sim_par_init, with one partition a process of comm (its size and
 * this process's rank). */
int sim_par_mpi_init(struct sim_par *p, struct sim_engine *eng, sim_time_t lookahead,
		     sim_par_owner_fn owner, void *ctx, MPI_Comm comm);
/* As sim_par_run, for this process's partition; every process calls it. */
int sim_par_mpi_run(struct sim_par *p, MPI_Comm comm);

#endif
