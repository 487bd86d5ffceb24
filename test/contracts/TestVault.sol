// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";

/// Plain OpenZeppelin ERC-4626 vault over one ERC-20, the shape of the opportunities the API deposits into.
contract TestVault is ERC4626 {
    constructor(IERC20 asset_, string memory name_, string memory symbol_) ERC20(name_, symbol_) ERC4626(asset_) {}
}

/// The same vault with a decimals offset (as OpenZeppelin recommends against inflation attacks): its shares have
/// 12 more decimals than its asset, as MetaMorpho's 18-decimal shares over 6-decimal USDC do.
contract TestOffsetVault is ERC4626 {
    constructor(IERC20 asset_, string memory name_, string memory symbol_) ERC20(name_, symbol_) ERC4626(asset_) {}

    function _decimalsOffset() internal pure override returns (uint8) {
        return 12;
    }
}

/// A vault with the limits real ones have (a deposit cap, a pause, a redeem limit), which it reports through
/// ERC-4626's `maxDeposit` and `maxRedeem` and enforces as OpenZeppelin does: a deposit or redeem above them reverts.
contract TestLimitedVault is ERC4626 {
    uint256 public cap = type(uint256).max;
    uint256 public redeemLimit = type(uint256).max;
    bool public paused;

    constructor(IERC20 asset_) ERC20("Limited Vault Share", "lvtUSD") ERC4626(asset_) {}

    function setLimits(uint256 cap_, uint256 redeemLimit_, bool paused_) external {
        cap = cap_;
        redeemLimit = redeemLimit_;
        paused = paused_;
    }

    function maxDeposit(address) public view override returns (uint256) {
        if (paused) return 0;
        uint256 held = totalAssets();
        return held >= cap ? 0 : cap - held;
    }

    function maxRedeem(address owner) public view override returns (uint256) {
        if (paused) return 0;
        uint256 shares = balanceOf(owner);
        return shares < redeemLimit ? shares : redeemLimit;
    }
}
