"""The benchmarks: bench-rn50 and bench-hgnet (shipped in the image), and the tooling's speed benchmarks.

In the image, no benchmark code (nor what it imports: the gates file's YAML reader) runs when the suite's own
files differ from the image's record: one line NOT PROVEN naming the file, exit 3 (ngc_common/suite_record.py).
"""

from ngc_common import suite_record

suite_record.refuse_if_changed(__file__)
