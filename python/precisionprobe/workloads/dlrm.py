"""DLRM with the structure of facebookresearch/dlrm and the paper's sizes (as defaults on GPU).

Bottom MLP over dense features, one EmbeddingBag(mode="sum") per categorical feature, pairwise
dot-product interaction as a plain method (invisible to module hooks), top MLP with a sigmoid
last, MSELoss, SGD, random data. Layer names follow the reference: bot_l.N, emb_l.N, top_l.N,
loss_fn.

  python3 -m precisionprobe.workloads.dlrm --iterations 5                      # small, CPU
  python3 -m precisionprobe.workloads.dlrm --paper-size --iterations 100       # 1M x 64 tables, batch 1K

--mlp-bot lists the dense input width first ("512-512-64": 512 features, Linear 512->512 and
512->64); --mlp-top lists the widths after the interaction ("1024-1024-1024-1"), whose input width
is computed. The last bottom width is the embedding dimension.
"""
import torch
from torch import nn

from .training import CycledBatches, batch_loader, common_arguments, setup, train

PAPER_SIZE = dict(rows_per_table=1_000_000, batch_size=1024, mlp_bot="512-512-64",
                  mlp_top="1024-1024-1024-1", num_tables=8)


class DLRM(nn.Module):
    def __init__(self, mlp_bot, mlp_top, num_tables, rows_per_table):
        super().__init__()
        embedding_dim = mlp_bot[-1]
        self.bot_l = self.create_mlp(mlp_bot, sigmoid_last=False)
        self.emb_l = nn.ModuleList(nn.EmbeddingBag(rows_per_table, embedding_dim, mode="sum")
                                   for _ in range(num_tables))
        features = num_tables + 1
        interaction_width = embedding_dim + features * (features - 1) // 2
        self.top_l = self.create_mlp([interaction_width, *mlp_top], sigmoid_last=True)
        self.loss_fn = nn.MSELoss(reduction="mean")
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("tril_rows", rows, persistent=False)
        self.register_buffer("tril_cols", cols, persistent=False)

    @staticmethod
    def create_mlp(widths, sigmoid_last):
        layers = []
        for i, (n_in, n_out) in enumerate(zip(widths, widths[1:])):
            layers.append(nn.Linear(n_in, n_out))
            last = i == len(widths) - 2
            layers.append(nn.Sigmoid() if last and sigmoid_last else nn.ReLU())
        return nn.Sequential(*layers)

    def apply_emb(self, offsets, indices):
        return [table(indices[k], offsets[k]) for k, table in enumerate(self.emb_l)]

    def interact_features(self, x, ly):
        """Dot interaction: every pair of feature vectors, below the diagonal, next to x."""
        batch_size, dim = x.shape
        features = torch.cat([x, *ly], dim=1).view(batch_size, -1, dim)
        dots = torch.bmm(features, features.transpose(1, 2))
        return torch.cat([x, dots[:, self.tril_rows, self.tril_cols]], dim=1)

    def forward(self, dense_x, offsets, indices):
        x = self.bot_l(dense_x)
        ly = self.apply_emb(offsets, indices)
        return self.top_l(self.interact_features(x, ly))


def random_batch(generator, batch_size, dense_features, num_tables, rows_per_table,
                 num_indices_per_lookup):
    """Dense features, per-table offsets and indices (1..num_indices_per_lookup per lookup), targets."""
    dense = torch.rand(batch_size, dense_features, generator=generator)
    offsets, indices = [], []
    for _ in range(num_tables):
        counts = torch.randint(1, num_indices_per_lookup + 1, (batch_size,), generator=generator)
        offsets.append(torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)[:-1]]))
        indices.append(torch.randint(0, rows_per_table, (int(counts.sum()),), generator=generator))
    target = torch.rand(batch_size, 1, generator=generator).round()
    return dense, offsets, indices, target


def parse_widths(text):
    return [int(w) for w in text.split("-")]


def build(args, device):
    """The model and its optimizer from parsed flags."""
    model = DLRM(parse_widths(args.mlp_bot), parse_widths(args.mlp_top), args.num_tables,
                 args.rows_per_table).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=args.learning_rate)


def make_batches(args):
    generator = torch.Generator().manual_seed(args.seed)
    count = max(1, min(args.iterations, args.distinct_batches))
    batches = [random_batch(generator, args.batch_size, parse_widths(args.mlp_bot)[0],
                            args.num_tables, args.rows_per_table, args.num_indices_per_lookup)
               for _ in range(count)]
    return CycledBatches(batches, args.iterations)


def training_step(model, optimizer):
    def step(batch):
        dense, offsets, indices, target = batch
        optimizer.zero_grad()
        loss = model.loss_fn(model(dense, offsets, indices), target)
        loss.backward()
        optimizer.step()
        return loss
    return step


def argument_parser():
    parser = common_arguments("DLRM training on random data", batch_size=128)
    parser.add_argument("--rows-per-table", type=int, default=1000)
    parser.add_argument("--num-tables", type=int, default=8)
    parser.add_argument("--mlp-bot", default="512-512-64", help="dense width first, last = embedding dim")
    parser.add_argument("--mlp-top", default="1024-1024-1024-1", help="widths after the interaction")
    parser.add_argument("--num-indices-per-lookup", type=int, default=10)
    parser.add_argument("--distinct-batches", type=int, default=16,
                        help="random batches generated up front and reused cyclically")
    parser.add_argument("--paper-size", action="store_true",
                        help="1M x 64 tables, batch 1024, 512-512-64 / 1024-1024-1024-1")
    return parser


def parse_args(argv=None):
    parser = argument_parser()
    args = parser.parse_args(argv)
    if args.paper_size:
        for name, value in PAPER_SIZE.items():
            setattr(args, name, value)
    return args


def main(argv=None):
    args = parse_args(argv)
    device = setup(args)
    model, optimizer = build(args, device)
    return train(training_step(model, optimizer), batch_loader(make_batches(args)), args.epochs,
                 device, "dlrm", args.quiet, args.seconds)


if __name__ == "__main__":
    main()
