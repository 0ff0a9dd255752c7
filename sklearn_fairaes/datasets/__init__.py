"""Essay data: the embedded demo corpus and a reader of the ASAP-AES files.

``load_demo_essays`` returns 180 short essays on one prompt, written for this
package (with paraphrases, two raters' scores and synthetic groups), so examples
run offline. ``load_asap`` reads the Kaggle ASAP files, which are not shipped.
``load_short_answers`` reads short-answer grading tables (none are shipped).
"""

from ._asap import load_asap
from ._demo import load_demo_essays, load_demo_prompt, load_demo_rubric
from ._short_answers import load_short_answers

__all__ = [
    "load_asap",
    "load_demo_essays",
    "load_demo_prompt",
    "load_demo_rubric",
    "load_short_answers",
]
