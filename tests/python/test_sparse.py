"""Sparse gradients: sparse_allreduce_async (allgathered indices and values) and
DistributedOptimizer with nn.Embedding(sparse=True), reduced both ways (allgather by
default, allreduce of the densified gradient with sparse_as_dense=True).

The equivalence tests follow test_optimizer_equivalence.py: every rank draws the same
global batch, trains on its slice of B rows and trains the single-process reference on
the whole batch locally.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import horde.torch as hvd
from _child_job import CHILD_PRELUDE, mpirun

B = 3
STEPS = 4
TOL = dict(rtol=1e-5, atol=1e-5)
ROWS, COLS = 10, 3


def sparse_contribution(rank_tensor, r, dtype):
    """Rank r's sparse [ROWS, COLS] tensor: none for rank 0, r + 1 rows for the others,
    one of them repeated, so the input is uncoalesced."""
    nnz = r + (1 if r else 0)
    rows = (rank_tensor(r, (nnz,), torch.int64, 0, ROWS) if nnz
            else torch.zeros(0, dtype=torch.int64))
    if nnz:
        rows[-1] = rows[0]  # a duplicate: coalescing must add the two
    values = rank_tensor(r + 1000, (nnz, COLS), dtype, -1.0, 1.0)
    return torch.sparse_coo_tensor(rows.unsqueeze(0), values, (ROWS, COLS))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_sparse_allreduce(rank_tensor, dtype, op_name):
    op = {"Sum": hvd.Sum, "Average": hvd.Average}[op_name]
    mine = sparse_contribution(rank_tensor, hvd.rank(), dtype)
    wait = hvd.sparse_allreduce_async(mine, f"sparse.{op_name}.{dtype}", op)
    result = wait()
    assert result.is_sparse and result.dtype == dtype and result.shape == (ROWS, COLS)
    expected = sum(sparse_contribution(rank_tensor, r, dtype).to_dense() for r in range(hvd.size()))
    if op_name == "Average":
        expected = expected / hvd.size()
    torch.testing.assert_close(result.to_dense(), expected)


@pytest.mark.parametrize("op_name", ["Max", "Min", "Product"])
def test_sparse_allreduce_rejects_other_ops(op_name):
    mine = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1, 2), (3, 2))
    with pytest.raises(ValueError, match="Sum or Average"):
        hvd.sparse_allreduce_async(mine, f"sparse.bad.{op_name}", getattr(hvd, op_name))
    after = hvd.allreduce(torch.ones(1), name=f"sparse.bad.{op_name}.after", op=hvd.Sum)
    assert after.item() == hvd.size()


# ---------------------------------------------------------------- sparse embeddings

VOCAB, DIM, WORDS = 12, 4, 3


class Bag(nn.Module):
    """A sparse embedding bag, optionally followed by a dense layer."""

    def __init__(self, head):
        super().__init__()
        torch.manual_seed(99)
        self.embedding = nn.Embedding(VOCAB, DIM, sparse=True)
        self.head = nn.Linear(DIM, 2) if head else None

    def forward(self, words):
        out = self.embedding(words).sum(1)
        return self.head(out) if self.head is not None else out


def word_batch(step, outputs):
    generator = torch.Generator().manual_seed(104729 + step)
    rows = hvd.size() * B
    return (torch.randint(0, VOCAB, (rows, WORDS), generator=generator),
            torch.randn(rows, outputs, generator=generator))


def my_rows(t):
    return t[hvd.rank() * B:(hvd.rank() + 1) * B]


SGD = lambda params: torch.optim.SGD(params, lr=0.2)  # noqa: E731 - no momentum: sparse grads
SPARSE_CASES = {
    # id -> (optimizer factory, has a dense head, DistributedOptimizer keyword arguments)
    "sgd-allgather": (SGD, True, {}),
    "sgd-as_dense": (SGD, True, {"sparse_as_dense": True}),
    # Two micro-batches' sparse gradients add up locally before the reduction; the
    # reference sums the two global micro-batches' mean losses (see the equivalence tests).
    "sgd-allgather-passes2": (SGD, True, {"backward_passes_per_step": 2}),
    "sgd-as_dense-passes2": (SGD, True, {"sparse_as_dense": True, "backward_passes_per_step": 2}),
    # A group is reduced as one dense unit, so its sparse member is densified.
    "sgd-num_groups1": (SGD, True, {"num_groups": 1}),
    "sparse_adam-allgather": (lambda params: torch.optim.SparseAdam(params, lr=0.05), False, {}),
}


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_adam_under_distributed_optimizer(sparse_as_dense):
    """Horovod's test_sparse_embeddings: SparseAdam accepts only sparse gradients, so the
    reduced gradient reaches it sparse either way; ranks see different words."""
    torch.manual_seed(3)
    embedding = torch.nn.Embedding(10, 3, sparse=True)
    hvd.broadcast_parameters(embedding.state_dict(), 0)
    words = torch.LongTensor([[1, 2, 4, 5], [4, 3, 2, 9]] if hvd.rank() == 0
                             else [[1, 3, 4], [4, 7, 9]])
    before = embedding.weight.detach().clone()
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SparseAdam(list(embedding.parameters()), lr=0.1),
        sparse_as_dense=sparse_as_dense)
    for _ in range(2):
        optimizer.zero_grad()
        embedding(words).sum().backward()
        optimizer.step()
        assert embedding.weight.grad.is_sparse
    # SparseAdam moves exactly the rows some rank looked up.
    moved = (embedding.weight.detach() != before).any(1).nonzero().flatten().tolist()
    every_rank_words = hvd.allgather_object(sorted(set(words.flatten().tolist())),
                                            name=f"sparse_adam.words.{sparse_as_dense}")
    assert moved == sorted(set().union(*every_rank_words))
    weights = hvd.allgather_object(embedding.weight.detach(),
                                   name=f"sparse_adam.weights.{sparse_as_dense}")
    assert all(torch.equal(w, weights[0]) for w in weights)


@pytest.mark.parametrize("case", list(SPARSE_CASES))
def test_sparse_embedding_matches_one_process(case):
    make_optimizer, head, kwargs = SPARSE_CASES[case]
    passes = kwargs.get("backward_passes_per_step", 1)
    outputs = 2 if head else DIM
    model, reference = Bag(head), Bag(head)
    initial = reference.embedding.weight.detach().clone()
    optimizer = hvd.DistributedOptimizer(make_optimizer(model.parameters()),
                                         named_parameters=model.named_parameters(), **kwargs)
    reference_optimizer = make_optimizer(reference.parameters())
    for step in range(STEPS):
        optimizer.zero_grad()
        reference_optimizer.zero_grad()
        for micro in range(passes):
            words, y = word_batch(step * passes + micro, outputs)
            F.mse_loss(model(my_rows(words)), my_rows(y)).backward()
            F.mse_loss(reference(words), y).backward()
        optimizer.step()
        # Reduced sparse or as dense, the optimizer gets the gradient sparse, as in Horovod.
        assert model.embedding.weight.grad.is_sparse
        reference_optimizer.step()

    assert not torch.allclose(reference.embedding.weight, initial)
    for (name, p), p_ref in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), p_ref.detach(), **TOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.skipif(hvd.size() != 1, reason="starts its own 2-rank job: only in the 1-rank run")
def test_sparse_embedding_used_on_one_rank_only(run_python):
    """Rank 1 does not use the embedding in the first step. Its gradient never appears
    there, so that rank reduces zeros -- which must meet rank 0's sparse reduction. (Observed:
    rank 1 submits a dense allreduce 'grad.embedding.weight' of zeros while rank 0 allgathers
    'grad.embedding.weight.indices' and '.values': both wait forever.) Rank 1 contributes
    nothing, so both ranks end with rank 0's gradient averaged over 2 ranks."""
    out = run_python(CHILD_PRELUDE + """
torch.manual_seed(3)
embedding, head = nn.Embedding(6, 2, sparse=True), nn.Linear(2, 1)
params = [("embedding.weight", embedding.weight), ("head.weight", head.weight),
          ("head.bias", head.bias)]
optimizer = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in params], lr=0.1),
                                     named_parameters=params)
words = torch.tensor([[1, 4]])
features = embedding(words).sum(1) if rank == 0 else torch.ones(1, 2)
head(features).pow(2).mean().backward()
within(10, optimizer.step)
torch.manual_seed(3)
e0, h0 = nn.Embedding(6, 2, sparse=True), nn.Linear(2, 1)
h0(e0(words).sum(1)).pow(2).mean().backward()
expected = e0.weight.grad.to_dense() / 2
got = embedding.weight.grad
got = got.to_dense() if got.is_sparse else got
say(f"embedding gradient ok: {torch.allclose(got, expected, atol=1e-6)}")
""", launcher=mpirun(2))
    assert "rank 0: embedding gradient ok: True" in out, out
    assert "rank 1: embedding gradient ok: True" in out, out
