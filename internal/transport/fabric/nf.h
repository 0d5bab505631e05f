//go:build fabric

// The C side of package fabric: thin wrappers over libfabric that take
// and return plain integers, so that the Go side never hands libfabric a
// Go pointer it keeps (operation contexts are numbers, not pointers).

#ifndef NARMA_FABRIC_NF_H
#define NARMA_FABRIC_NF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct nf_ep nf_ep;

// What the endpoint got from the provider.
typedef struct nf_attr {
	char prov[64];
	char fabric[128];
	char domain[128];
	uint64_t mr_mode;
	uint64_t msg_order;
	uint64_t caps;
	uint64_t op_flags;
	size_t cq_data_size;
	size_t inject_size;
	size_t max_msg_size;
	size_t addrlen;
	int wait_fd;		// the CQ's wait descriptor, or -1
	int delivery;		// operations complete once delivered (FI_DELIVERY_COMPLETE)
} nf_attr;

// One completion, successful or not.
typedef struct nf_comp {
	uint64_t ctx;		// the operation's number; 0 for remote events
	uint64_t flags;
	uint64_t len;
	uint64_t data;		// remote CQ data
	int32_t err;		// 0, or the positive libfabric error of a failed operation
	int32_t prov_errno;
} nf_comp;

// delivery: ask for FI_DELIVERY_COMPLETE first (0: never, for tests).
int nf_open(const char *prov, const char *node, const char *domain, int delivery, nf_ep **out, nf_attr *attr, char *errbuf, size_t errlen);
// nf_shut closes the endpoint, its completion queue and address vector:
// libfabric holds no buffer after it. nf_close then releases the rest.
void nf_shut(nf_ep *e);
void nf_close(nf_ep *e);
int nf_getname(nf_ep *e, void *buf, size_t *len);
int nf_av_insert(nf_ep *e, const void *addrs, size_t n);
// nf_mr_reg registers buf for remote access if remote, else for local
// use as the source or destination of operations (FI_MR_LOCAL).
int nf_mr_reg(nf_ep *e, void *buf, size_t len, int remote, uint64_t req_key, uint64_t *mr, uint64_t *key, uint64_t *desc);
int nf_mr_close(uint64_t mr);
// desc: the local descriptor of buf's registration, 0 if none.
// nf_write completes on delivery only if delivery and the endpoint has
// FI_DELIVERY_COMPLETE, else on transmission.
ssize_t nf_write(nf_ep *e, const void *buf, uint64_t desc, size_t len, uint64_t dest, uint64_t addr, uint64_t key, uint64_t data, int with_data, int inject, int delivery, uint64_t ctx);
ssize_t nf_read(nf_ep *e, void *buf, uint64_t desc, size_t len, uint64_t dest, uint64_t addr, uint64_t key, uint64_t ctx);
ssize_t nf_send(nf_ep *e, const void *buf, uint64_t desc, size_t len, uint64_t dest, int inject, uint64_t ctx);
ssize_t nf_recv(nf_ep *e, void *buf, uint64_t desc, size_t len, uint64_t ctx);
int nf_poll(nf_ep *e, nf_comp *out, int max);
int nf_trywait(nf_ep *e);
// Kinds of atomics: applied, applied with the previous contents
// returned, compare-and-swap.
enum { NF_ATOMIC_WRITE, NF_ATOMIC_FETCH, NF_ATOMIC_COMPARE };

int nf_atomic_valid(nf_ep *e, int kind, int op, int dt, size_t *count);
// src, compare and result lie in one registration (desc, or 0).
ssize_t nf_atomic(nf_ep *e, int kind, int op, int dt, const void *src, void *compare, void *result, uint64_t desc, size_t count,
		  uint64_t dest, uint64_t addr, uint64_t key, uint64_t ctx);
const char *nf_strerror(int err);

#endif
