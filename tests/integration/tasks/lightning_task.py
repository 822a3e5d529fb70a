"""A LightningModule as it stands: training_step's loss, configure_optimizers' SGD with a StepLR stepped every 4
optimizer steps, the DataLoader of train_dataloader() (its batch of 16 and its collate)."""
import lightning as L
import torch


def scaled_collate(samples):  # the module's DataLoader's own collate: stacks, and scales x by 0.5
    xs, ys = zip(*samples)
    return torch.stack(xs) * 0.5, torch.stack(ys)


class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.99)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 4}}

    def train_dataloader(self):
        g = torch.Generator().manual_seed(4)
        x = torch.randn(256, 12, generator=g)
        ds = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long() + (x[:, 1] > 1).long())
        return torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, collate_fn=scaled_collate)


def model():
    return Lit()
