"""Batch normalization whose batch statistics are computed over all ranks' batches."""

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from horde.torch.mpi_ops import Sum, allreduce, size


def _reduce_dims(x):
    return [d for d in range(x.dim()) if d != 1]


class _SyncBatchNormFunction(torch.autograd.Function):
    """Normalizes with the mean and variance of the global batch; the backward pass
    reduces the two per-channel sums the input gradient needs."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum):
        dims = _reduce_dims(x)
        channels = x.shape[1]
        local_count = x.numel() // channels
        # Two passes (mean, then squared deviations) keep the variance accurate.
        sums = allreduce(torch.cat([x.sum(dims), torch.tensor([float(local_count)], dtype=x.dtype)]),
                         op=Sum)
        count = sums[-1]
        mean = sums[:-1] / count
        shape = [1, channels] + [1] * (x.dim() - 2)
        centered = x - mean.view(shape)
        var = allreduce((centered * centered).sum(dims), op=Sum) / count
        invstd = torch.rsqrt(var + eps)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
                unbiased = var * count / torch.clamp(count - 1, min=1)
                running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
        normalized = centered * invstd.view(shape)
        ctx.save_for_backward(normalized, weight, invstd, count)
        out = normalized
        if weight is not None:
            out = out * weight.view(shape) + bias.view(shape)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        normalized, weight, invstd, count = ctx.saved_tensors
        dims = _reduce_dims(grad_out)
        shape = [1, grad_out.shape[1]] + [1] * (grad_out.dim() - 2)
        # This rank's share of the parameter gradients; DistributedOptimizer reduces them.
        grad_bias = grad_out.sum(dims)
        grad_weight = (grad_out * normalized).sum(dims)
        scale = invstd if weight is None else invstd * weight
        sums = allreduce(torch.cat([grad_bias, grad_weight]), op=Sum)
        mean_dy, mean_dy_xhat = (sums / count).chunk(2)
        grad_x = (grad_out - mean_dy.view(shape) - normalized * mean_dy_xhat.view(shape)) * scale.view(shape)
        if weight is None:
            grad_weight = grad_bias = None
        return grad_x, grad_weight, grad_bias, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over N-dimensional input (N >= 2) whose training statistics come from
    the batches of all ranks, as if one process saw the global batch. In eval mode (or on
    one rank) it is plain batch normalization with the running statistics."""

    def _check_input_dim(self, x):
        if x.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {x.dim()}D input)")

    def forward(self, x):
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        if not self.training or size() == 1:
            use_batch_stats = self.training or not self.track_running_stats
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                use_batch_stats, momentum, self.eps)
        running_mean = self.running_mean if self.track_running_stats else None
        running_var = self.running_var if self.track_running_stats else None
        return _SyncBatchNormFunction.apply(x, self.weight, self.bias, running_mean, running_var,
                                            self.eps, momentum)
