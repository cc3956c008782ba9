defmodule ExZarr.Metadata.AttributesTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Metadata.Attributes
end
