//go:build fabric

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>

#include "nf.h"

struct nf_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t *addrs;
	size_t naddrs;
	uint64_t op_flags;
	int mr_endpoint;
};

#define NF_VERSION FI_VERSION(1, 9)

// getinfo asks for an RDM endpoint with messages, RMA and remote CQ data
// from prov (any if empty), on node and domain if given, with extra
// capabilities caps and operation flags op_flags.
static int getinfo(const char *prov, const char *node, const char *domain, uint64_t caps, uint64_t op_flags, struct fi_info **out)
{
	struct fi_info *hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | caps;
	hints->mode = 0;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->tx_attr->op_flags = op_flags;
	if (prov && *prov)
		hints->fabric_attr->prov_name = strdup(prov);
	if (domain && *domain)
		hints->domain_attr->name = strdup(domain);
	int ret = fi_getinfo(NF_VERSION, (node && *node) ? node : NULL, NULL, (node && *node) ? FI_SOURCE : 0, hints, out);
	fi_freeinfo(hints);
	return ret;
}

static void copystr(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

int nf_open(const char *prov, const char *node, const char *domain, int delivery, nf_ep **out, nf_attr *attr, char *errbuf, size_t errlen)
{
	struct fi_info *info = NULL;
	const char *step = "fi_getinfo";
	// Delivery completion matters most (Flush needs no round trip),
	// then atomics (else software ones at the target).
	int ret = -FI_ENODATA;
	if (delivery)
		ret = getinfo(prov, node, domain, FI_ATOMIC, FI_DELIVERY_COMPLETE, &info);
	if (ret && delivery)
		ret = getinfo(prov, node, domain, 0, FI_DELIVERY_COMPLETE, &info);
	if (ret)
		ret = getinfo(prov, node, domain, FI_ATOMIC, 0, &info);
	if (ret)
		ret = getinfo(prov, node, domain, 0, 0, &info);
	if (ret) {
		snprintf(errbuf, errlen, "%s: %s", step, fi_strerror(-ret));
		return ret;
	}
	nf_ep *e = calloc(1, sizeof(*e));
	if (!e) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
	e->info = info;
	e->op_flags = info->tx_attr->op_flags & FI_DELIVERY_COMPLETE;
	e->mr_endpoint = (info->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;

	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD, .size = 0};
	step = "fi_fabric";
	if ((ret = fi_fabric(info->fabric_attr, &e->fabric, NULL)))
		goto fail;
	step = "fi_domain";
	if ((ret = fi_domain(e->fabric, info, &e->domain, NULL)))
		goto fail;
	step = "fi_av_open";
	if ((ret = fi_av_open(e->domain, &av_attr, &e->av, NULL)))
		goto fail;
	step = "fi_cq_open";
	if ((ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL))) {
		cq_attr.wait_obj = FI_WAIT_NONE;
		if ((ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL)))
			goto fail;
	}
	step = "fi_endpoint";
	if ((ret = fi_endpoint(e->domain, info, &e->ep, NULL)))
		goto fail;
	step = "fi_ep_bind";
	if ((ret = fi_ep_bind(e->ep, &e->av->fid, 0)))
		goto fail;
	if ((ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)))
		goto fail;
	step = "fi_enable";
	if ((ret = fi_enable(e->ep)))
		goto fail;

	memset(attr, 0, sizeof(*attr));
	copystr(attr->prov, sizeof(attr->prov), info->fabric_attr->prov_name);
	copystr(attr->fabric, sizeof(attr->fabric), info->fabric_attr->name);
	copystr(attr->domain, sizeof(attr->domain), info->domain_attr->name);
	attr->mr_mode = info->domain_attr->mr_mode;
	attr->msg_order = info->tx_attr->msg_order;
	attr->caps = info->caps;
	attr->op_flags = e->op_flags;
	attr->cq_data_size = info->domain_attr->cq_data_size;
	attr->inject_size = info->tx_attr->inject_size;
	attr->max_msg_size = info->ep_attr->max_msg_size;
	attr->delivery = (e->op_flags & FI_DELIVERY_COMPLETE) != 0;
	attr->wait_fd = -1;
	if (cq_attr.wait_obj == FI_WAIT_FD) {
		int fd = -1;
		if (fi_control(&e->cq->fid, FI_GETWAIT, &fd) == 0)
			attr->wait_fd = fd;
	}
	size_t len = 0;
	fi_getname(&e->ep->fid, NULL, &len);
	attr->addrlen = len;
	*out = e;
	return 0;
fail:
	snprintf(errbuf, errlen, "%s: %s", step, fi_strerror(-ret));
	nf_close(e);
	return ret;
}

void nf_shut(nf_ep *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->av)
		fi_close(&e->av->fid);
	e->ep = NULL;
	e->cq = NULL;
	e->av = NULL;
}

void nf_close(nf_ep *e)
{
	if (!e)
		return;
	nf_shut(e);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	if (e->info)
		fi_freeinfo(e->info);
	free(e->addrs);
	free(e);
}

int nf_getname(nf_ep *e, void *buf, size_t *len)
{
	return fi_getname(&e->ep->fid, buf, len);
}

int nf_av_insert(nf_ep *e, const void *addrs, size_t n)
{
	fi_addr_t *fa = calloc(n, sizeof(*fa));
	if (!fa)
		return -FI_ENOMEM;
	int ret = fi_av_insert(e->av, addrs, n, fa, 0, NULL);
	if (ret != (int)n) {
		free(fa);
		return ret < 0 ? ret : -FI_EADDRNOTAVAIL;
	}
	e->addrs = fa;
	e->naddrs = n;
	return 0;
}

int nf_mr_reg(nf_ep *e, void *buf, size_t len, int remote, uint64_t req_key, uint64_t *mr, uint64_t *key, uint64_t *desc)
{
	struct fid_mr *m = NULL;
	uint64_t access = remote ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_SEND | FI_RECV | FI_READ | FI_WRITE;
	int ret = fi_mr_reg(e->domain, buf, len, access, 0, req_key, 0, &m, NULL);
	if (ret)
		return ret;
	if (e->mr_endpoint) {
		if ((ret = fi_mr_bind(m, &e->ep->fid, 0)) || (ret = fi_mr_enable(m))) {
			fi_close(&m->fid);
			return ret;
		}
	}
	*mr = (uint64_t)(uintptr_t)m;
	*key = fi_mr_key(m);
	*desc = (uint64_t)(uintptr_t)fi_mr_desc(m);
	return 0;
}

int nf_mr_close(uint64_t mr)
{
	struct fid_mr *m = (struct fid_mr *)(uintptr_t)mr;
	return fi_close(&m->fid);
}

static fi_addr_t addr_of(nf_ep *e, uint64_t dest)
{
	return dest < e->naddrs ? e->addrs[dest] : FI_ADDR_NOTAVAIL;
}

ssize_t nf_write(nf_ep *e, const void *buf, uint64_t desc, size_t len, uint64_t dest, uint64_t addr, uint64_t key, uint64_t data, int with_data, int inject, int delivery, uint64_t ctx)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};
	void *d = (void *)(uintptr_t)desc;
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.desc = desc ? &d : NULL,
		.iov_count = len ? 1 : 0,
		.addr = addr_of(e, dest),
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = (void *)(uintptr_t)ctx,
		.data = data,
	};
	uint64_t flags = FI_COMPLETION | (delivery ? e->op_flags : 0);
	if (with_data)
		flags |= FI_REMOTE_CQ_DATA;
	if (inject)
		flags |= FI_INJECT;
	return fi_writemsg(e->ep, &msg, flags);
}

ssize_t nf_read(nf_ep *e, void *buf, uint64_t desc, size_t len, uint64_t dest, uint64_t addr, uint64_t key, uint64_t ctx)
{
	return fi_read(e->ep, buf, len, (void *)(uintptr_t)desc, addr_of(e, dest), addr, key, (void *)(uintptr_t)ctx);
}

ssize_t nf_send(nf_ep *e, const void *buf, uint64_t desc, size_t len, uint64_t dest, int inject, uint64_t ctx)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	void *d = (void *)(uintptr_t)desc;
	struct fi_msg msg = {
		.msg_iov = &iov,
		.desc = desc ? &d : NULL,
		.iov_count = 1,
		.addr = addr_of(e, dest),
		.context = (void *)(uintptr_t)ctx,
		.data = 0,
	};
	uint64_t flags = FI_COMPLETION | e->op_flags;
	if (inject)
		flags |= FI_INJECT;
	return fi_sendmsg(e->ep, &msg, flags);
}

ssize_t nf_recv(nf_ep *e, void *buf, uint64_t desc, size_t len, uint64_t ctx)
{
	return fi_recv(e->ep, buf, len, (void *)(uintptr_t)desc, FI_ADDR_UNSPEC, (void *)(uintptr_t)ctx);
}

int nf_poll(nf_ep *e, nf_comp *out, int max)
{
	struct fi_cq_data_entry ents[32];
	if (max > 32)
		max = 32;
	ssize_t n = fi_cq_read(e->cq, ents, max);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		ssize_t r = fi_cq_readerr(e->cq, &err, 0);
		if (r == -FI_EAGAIN)
			return 0;
		if (r < 0)
			return (int)r;
		memset(out, 0, sizeof(*out));
		out->ctx = (uint64_t)(uintptr_t)err.op_context;
		out->flags = err.flags;
		out->len = err.len;
		out->data = err.data;
		out->err = err.err ? err.err : FI_EOTHER;
		out->prov_errno = err.prov_errno;
		return 1;
	}
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i++) {
		out[i].ctx = (uint64_t)(uintptr_t)ents[i].op_context;
		out[i].flags = ents[i].flags;
		out[i].len = ents[i].len;
		out[i].data = ents[i].data;
		out[i].err = 0;
		out[i].prov_errno = 0;
	}
	return (int)n;
}

int nf_trywait(nf_ep *e)
{
	struct fid *fids[1] = {&e->cq->fid};
	return fi_trywait(e->fabric, fids, 1);
}

int nf_atomic_valid(nf_ep *e, int kind, int op, int dt, size_t *count)
{
	if (!(e->info->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	switch (kind) {
	case NF_ATOMIC_WRITE:
		return fi_atomicvalid(e->ep, dt, op, count);
	case NF_ATOMIC_FETCH:
		return fi_fetch_atomicvalid(e->ep, dt, op, count);
	case NF_ATOMIC_COMPARE:
		return fi_compare_atomicvalid(e->ep, dt, op, count);
	}
	return -FI_EINVAL;
}

ssize_t nf_atomic(nf_ep *e, int kind, int op, int dt, const void *src, void *compare, void *result, uint64_t desc, size_t count,
		  uint64_t dest, uint64_t addr, uint64_t key, uint64_t ctx)
{
	struct fi_ioc ioc = {.addr = (void *)src, .count = count};
	struct fi_rma_ioc rma = {.addr = addr, .count = count, .key = key};
	void *d = (void *)(uintptr_t)desc;
	void **dp = desc ? &d : NULL;
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc,
		.desc = dp,
		.iov_count = 1,
		.addr = addr_of(e, dest),
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.datatype = dt,
		.op = op,
		.context = (void *)(uintptr_t)ctx,
		.data = 0,
	};
	uint64_t flags = FI_COMPLETION | e->op_flags;
	struct fi_ioc res = {.addr = result, .count = count};
	struct fi_ioc cmp = {.addr = compare, .count = count};
	switch (kind) {
	case NF_ATOMIC_WRITE:
		return fi_atomicmsg(e->ep, &msg, flags);
	case NF_ATOMIC_FETCH:
		return fi_fetch_atomicmsg(e->ep, &msg, &res, dp, 1, flags);
	case NF_ATOMIC_COMPARE:
		return fi_compare_atomicmsg(e->ep, &msg, &cmp, dp, 1, &res, dp, 1, flags);
	}
	return -FI_EINVAL;
}

const char *nf_strerror(int err)
{
	return fi_strerror(err < 0 ? -err : err);
}
