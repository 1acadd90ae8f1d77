"""Gradients laid out as views into flat, persistent buffers ("buckets"), as
DistributedDataParallel's ``gradient_as_bucket_view`` does: backward accumulates each
gradient straight into its slice of a bucket, and a bucket whose gradients are all ready
is reduced with one allreduce in place — no copy into a fusion buffer and none back out.

Buckets hold parameters in reverse order (backward produces the last layers' gradients
first, so the first bucket fills first), one dtype and device each, up to a byte cap.
"""

import torch


class _Bucket:
    def __init__(self, params, name):
        self.params = params
        self.name = name
        numel = sum(p.numel() for p in params)
        self.buffer = torch.zeros(numel, dtype=params[0].dtype, device=params[0].device)
        self.views = {}
        offset = 0
        for p in params:
            self.views[p] = self.buffer[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        self.ready = set()  # parameters whose gradients are complete this step


class GradientBuckets:
    def __init__(self, params, names, cap_bytes):
        """params: the trainable parameters in the optimizer's order; names: parameter ->
        the name its gradient's allreduce would use (a bucket is named after its first)."""
        self.buckets = []
        current, used = [], 0
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            fits = current and used + nbytes <= cap_bytes and \
                (p.dtype, p.device) == (current[0].dtype, current[0].device)
            if current and not fits:
                self.buckets.append(_Bucket(current, f"{names[current[0]]}.bucket"))
                current, used = [], 0
            current.append(p)
            used += nbytes
        if current:
            self.buckets.append(_Bucket(current, f"{names[current[0]]}.bucket"))
        self._bucket_of = {p: b for b in self.buckets for p in b.params}
        for p in params:
            self.attach(p)

    def attach(self, p):
        """Points p.grad at its view again if something replaced it (zero_grad with
        set_to_none, a user's assignment), keeping any values it had."""
        view = self._bucket_of[p].views[p]
        grad = p.grad
        if grad is not None and grad.data_ptr() == view.data_ptr():
            return
        with torch.no_grad():
            if grad is None:
                view.zero_()
            else:
                view.copy_(grad.to_dense() if grad.is_sparse else grad)
        p.grad = view

    def mark_ready(self, p):
        """Records that p's gradient is complete; returns its bucket when that completes
        the bucket, else None."""
        self.attach(p)
        bucket = self._bucket_of[p]
        bucket.ready.add(p)
        return bucket if len(bucket.ready) == len(bucket.params) else None

    def waiting(self):
        """Parameters whose gradients were not marked ready this step."""
        return [p for b in self.buckets for p in b.params if p not in b.ready]

    def new_step(self):
        for b in self.buckets:
            b.ready.clear()

    def zero_(self):
        for b in self.buckets:
            b.buffer.zero_()
        for b in self.buckets:
            for p in b.params:
                self.attach(p)
