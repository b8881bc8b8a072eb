"""What the package's manifest declares, as `swift package describe` reads it: the one place the
scripts learn the package's products from."""
import json
import subprocess


def library_products(package_dir):
    """{product name: [its targets]} for every library product of the package in `package_dir`."""
    description = json.loads(subprocess.run(
        ["swift", "package", "describe", "--type", "json"],
        cwd=package_dir, check=True, capture_output=True, text=True).stdout)
    return {product["name"]: product["targets"]
            for product in description["products"] if "library" in product["type"]}
