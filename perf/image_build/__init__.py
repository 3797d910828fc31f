"""The image build's measurements: cold and no-change builds, reproducibility, a shared cache."""
