"""Default device prices (``law.power.PRICES_USD_PER_DEVICE_HOUR``): each a catalog device with its vendor source;
a device without one asks for --price-per-gpu-hour instead of guessing."""
from ironlaw.law import power
from ironlaw.machine import hardware


def test_every_default_price_is_a_catalog_device_with_a_vendor_source():
    names = {d.name for d in hardware.catalog()}
    for name, (usd, source) in power.PRICES_USD_PER_DEVICE_HOUR.items():
        assert name in names and usd > 0 and source.startswith("vendor: "), name


def test_a_device_without_a_sourced_price_asks_for_one():
    hw = hardware.get("b200")
    assert hw.name not in power.PRICES_USD_PER_DEVICE_HOUR
    assert power.price(hw, None) == (None, "no default price for b200; give --price-per-gpu-hour")
    assert power.price(hw, 6.5) == (6.5, "given: --price-per-gpu-hour")
