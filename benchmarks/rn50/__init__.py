"""ResNet50 v1.5 training and inference benchmark (bench-rn50)."""
