"""Doubles of the outside world, each speaking the real protocol at its real boundary."""
