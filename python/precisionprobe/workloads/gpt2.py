"""A small GPT-2-style decoder (pre-LayerNorm blocks, causal self-attention, GELU MLP).

Module names follow GPT-2's: wte, wpe, h.N.ln_1, h.N.attn.c_attn, h.N.attn.c_proj, h.N.ln_2,
h.N.mlp.c_fc, h.N.mlp.act, h.N.mlp.c_proj, ln_f, lm_head (weights tied to wte). The attention
arithmetic itself (q @ k^T, mask, softmax, @ v) is functional and so invisible to module hooks.
Random tokens, next-token CrossEntropyLoss, AdamW.

  python3 -m precisionprobe.workloads.gpt2 --iterations 5
"""
import math

import torch
from torch import nn

from .training import CycledBatches, batch_loader, common_arguments, setup, train


class CausalSelfAttention(nn.Module):
    def __init__(self, embd, heads, dropout):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(embd, 3 * embd)
        self.c_proj = nn.Linear(embd, embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        batch, seq, embd = x.shape
        q, k, v = self.c_attn(x).split(embd, dim=2)
        q, k, v = (t.view(batch, seq, self.heads, embd // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        mask = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
        weights = self.attn_dropout(scores.masked_fill(mask, float("-inf")).softmax(dim=-1))
        y = (weights @ v).transpose(1, 2).contiguous().view(batch, seq, embd)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, embd, dropout):
        super().__init__()
        self.c_fc = nn.Linear(embd, 4 * embd)
        self.act = nn.GELU()
        self.c_proj = nn.Linear(4 * embd, embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, embd, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embd)
        self.attn = CausalSelfAttention(embd, heads, dropout)
        self.ln_2 = nn.LayerNorm(embd)
        self.mlp = MLP(embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab, seq_len, layers, heads, embd, dropout):
        super().__init__()
        self.wte = nn.Embedding(vocab, embd)
        self.wpe = nn.Embedding(seq_len, embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(embd, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(embd)
        self.lm_head = nn.Linear(embd, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.loss_fn = nn.CrossEntropyLoss()
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        """GPT-2's initialization: small normal weights, zero biases (unit-normal embeddings
        tied to the output layer would give huge logits)."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.drop(self.wte(tokens) + self.wpe(positions))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def argument_parser():
    parser = common_arguments("GPT-2-style language model training on random tokens", batch_size=8)
    parser.set_defaults(learning_rate=3e-4)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--embd", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.1)
    return parser


def build(args, device):
    model = GPT2(args.vocab, args.seq_len, args.layers, args.heads, args.embd, args.dropout).to(device)
    return model, torch.optim.AdamW(model.parameters(), lr=args.learning_rate)

# Random batches made up front; longer runs (--iterations 1000000000 --seconds 60) repeat them.
DISTINCT_BATCHES = 64


def make_batches(args):
    generator = torch.Generator().manual_seed(args.seed)
    batches = [torch.randint(0, args.vocab, (args.batch_size, args.seq_len + 1), generator=generator)
               for _ in range(min(args.iterations, DISTINCT_BATCHES))]
    return CycledBatches(batches, args.iterations)


def training_step(model, optimizer):
    def step(tokens):
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        optimizer.zero_grad()
        logits = model(inputs)
        loss = model.loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss
    return step


def main(argv=None):
    args = argument_parser().parse_args(argv)
    device = setup(args)
    model, optimizer = build(args, device)
    return train(training_step(model, optimizer), batch_loader(make_batches(args)), args.epochs,
                 device, "gpt2", args.quiet, args.seconds)


if __name__ == "__main__":
    main()
