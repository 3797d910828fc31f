"""PP-HGNet training and TensorRT inference benchmark (bench-hgnet)."""
