defmodule ExZarr.Test.Tmp do
  @moduledoc false
  # Paths for the tests' scratch files.

  @doc """
  A path under the system's temporary directory that no other test run uses: named by
  `prefix`, this OS process and a number unique in it (directories left behind by a run that
  was killed never collide with a later run's).
  """
  @spec path(String.t()) :: Path.t()
  def path(prefix),
    do:
      Path.join(
        System.tmp_dir!(),
        "#{prefix}#{System.pid()}_#{System.unique_integer([:positive])}"
      )
end
