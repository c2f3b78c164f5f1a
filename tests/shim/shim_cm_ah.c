/* SPDX-License-Identifier: MIT */
/*
 * shim_cm_ah.c - the address vector rdma_cm gives a UD client (docs/shim.md,
 * "rdma_cm"): on InfiniBand the server's LID, on RoCE a GRH to its GID
 * (::ffff:10.0.x.y with the LID in x.y) and no LID. One process forks: the
 * child listens on host h0 (UDP port space) and accepts with a UD QP, the
 * parent connects from h1 and prints what its ESTABLISHED event carries:
 *   ah: is_global G dlid L dgid_lid D qpn Q qkey K
 * tests/interop/shim_rdmacm.sh runs it on both fabrics.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PORT 7700

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *e;

	if (rdma_get_cm_event(ch, &e)) {
		perror("rdma_get_cm_event");
		exit(2);
	}
	if (e->event != t) {
		fprintf(stderr, "got %s (status %d), expected %s\n", rdma_event_str(e->event),
			e->status, rdma_event_str(t));
		exit(2);
	}
	return e;
}

static struct ibv_qp_init_attr ud_attr(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				      .cap = { .max_send_wr = 1, .max_recv_wr = 1,
					       .max_send_sge = 1, .max_recv_sge = 1 } };
	return a;
}

static int server(int ready)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct rdma_conn_param p = { 0 };
	struct rdma_cm_id *l, *id;
	struct rdma_cm_event *e;
	struct ibv_cq *cq;
	struct ibv_qp_init_attr a;

	if (!ch || rdma_create_id(ch, &l, NULL, RDMA_PS_UDP) ||
	    rdma_bind_addr(l, (struct sockaddr *)&sin) || rdma_listen(l, 1))
		return 2;
	if (write(ready, "1", 1) != 1)
		return 2;
	e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = e->id;
	cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	a = ud_attr(cq);
	if (!cq || rdma_create_qp(id, NULL, &a))
		return 2;
	p.qp_num = id->qp->qp_num;
	if (rdma_accept(id, &p))
		return 2;
	rdma_ack_cm_event(e);
	sleep(1);	/* simulated: the client's SIDR_REP arrives meanwhile */
	return 0;
}

int main(void)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_UDP }, *res;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr a;
	struct ibv_cq *cq;
	int fds[2], st;
	char b;
	pid_t pid;

	if (pipe(fds))
		return 2;
	pid = fork();
	if (pid == 0) {
		setenv("IBFAB_HOST", "h0", 1);
		close(fds[0]);
		_exit(server(fds[1]));
	}
	close(fds[1]);
	if (read(fds[0], &b, 1) != 1)
		return 2;
	setenv("IBFAB_HOST", "h1", 1);
	ch = rdma_create_event_channel();
	if (!ch || rdma_getaddrinfo("h0", "7700", &hints, &res) ||
	    rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000))
		return 2;
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		return 2;
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	a = ud_attr(cq);
	if (!cq || rdma_create_qp(id, NULL, &a) || rdma_connect(id, NULL))
		return 2;
	e = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
	const struct ibv_ah_attr *ah = &e->param.ud.ah_attr;

	printf("ah: is_global %d dlid %u dgid_lid %u qpn %s qkey 0x%x\n", ah->is_global, ah->dlid,
	       ah->is_global ? (unsigned)(ah->grh.dgid.raw[14] << 8 | ah->grh.dgid.raw[15]) : 0,
	       e->param.ud.qp_num ? "set" : "0", e->param.ud.qkey);
	rdma_ack_cm_event(e);
	rdma_freeaddrinfo(res);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
