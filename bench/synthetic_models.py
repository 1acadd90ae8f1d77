"""The synthetic workloads the training benchmarks share: a torchvision model on random
images, or a 12-layer nn.TransformerEncoder token classifier on random tokens."""

import torch
import torchvision
from torch import nn

VOCABULARY = 1000


class TokenClassifier(nn.Module):
    """Embedding, a 12-layer transformer encoder and a per-token head: 147 parameter
    tensors, 12 of them LayerNorm pairs."""

    def __init__(self, layers=12, d_model=256, heads=4):
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, VOCABULARY)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens))).flatten(0, 1)


def synthetic_data(args):
    """The model's constructor, a batch of inputs and its labels."""
    if args.model == "transformer":
        tokens = torch.randint(0, VOCABULARY, (args.batch_size, args.sequence_length))
        labels = torch.randint(0, VOCABULARY, (args.batch_size * args.sequence_length,))
        return TokenClassifier, tokens, labels
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    return (getattr(torchvision.models, args.model), images,
            torch.randint(0, 1000, (args.batch_size,)))
