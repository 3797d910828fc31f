# The OS base where no base image can be pulled: a Debian rootfs made by mmdebstrap (ngc_paddle/lock/base_image.py)
# with SOURCE_DATE_EPOCH set to the lock's archive snapshot, so that the same archive gives the same tar, and
# this image the same digest, on every build host.
FROM scratch
ARG SOURCE_DATE_EPOCH
ADD rootfs.tar /
CMD ["/bin/bash"]
